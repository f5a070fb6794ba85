"""``medrl recipes``: list the shipped recipes, show one resolved, explain every key."""

from __future__ import annotations

HELP = "list recipes, show one resolved (profile and --set applied), explain every key with its help"

DESCRIPTION = """\
  medrl recipes                                    the shipped recipes, their paper and methods (= recipes list)
  medrl recipes list                               the same
  medrl recipes show mrpo                          the resolved recipe as YAML (what config.yaml stores, with
                                                   `methods` filled in with the methods the run composes)
  medrl recipes show mrpo --explain                every key with its value and its help: the schema's
                                                   fields, each method's config (algorithm.<section>),
                                                   where each reward option comes from, TRL's help
                                                   for the grpo / sft keys
  medrl recipes show grpo --set "methods=['my_pkg.my_method:LengthPenalty']" --explain
                                                   a method of your own, its section and help included

NAME is a shipped recipe or a path to a YAML file. Problems with a key are reported with its help.
"""


def add_arguments(p) -> None:
    p.add_argument("action", nargs="?", default="list", choices=["list", "show"],
                   help="list the recipes (the default), or show one")
    p.add_argument("name", nargs="?", default=None, help="recipe name or YAML path (for show)")
    p.add_argument("--explain", action="store_true", help="every key with its value and its help text")
    p.add_argument("--profile", default=None, help="profile overlay, e.g. 'cpu'")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a key (YAML value), as medrl train --set")


def run(args) -> int:
    from medrl.train.recipes import list_recipes, load_recipe

    if args.action == "list":
        import logging

        from medrl.train.recipes import run_methods

        logging.getLogger("medrl.train").setLevel(logging.ERROR)  # encoder substitutions: `show` reports them
        for name in list_recipes():
            recipe = load_recipe(name, check_trl=False)
            methods = ", ".join(m.label() for m in run_methods(recipe)) or "-"
            print(f"{name:32s} methods: {methods:28s} {recipe.paper.split(':')[0]}")
        return 0
    if not args.name:
        raise SystemExit("medrl recipes show: name a recipe (medrl recipes list shows them)")
    recipe = load_recipe(args.name, profile=args.profile, overrides=args.overrides)
    from medrl.train.recipe_help import describe_methods, explain

    if args.explain:
        print("\n".join(explain(recipe)))
        return 0
    import yaml

    from medrl.train.recipes import run_methods

    shown = recipe.to_dict()
    if not shown["methods"]:  # the header and the YAML name the same methods: the ones the run composes
        shown["methods"] = [m.label() for m in run_methods(recipe)]
    print("\n".join(f"# {line}" for line in describe_methods(recipe)))
    print(yaml.safe_dump(shown, sort_keys=False, allow_unicode=True), end="")
    return 0
