"""``medrl`` command line. Each subcommand lives in ``medrl/commands/<name>.py`` and exposes
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``. Only the chosen
subcommand's module is imported, so ``medrl --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

# name -> module under medrl.commands (kept in the order shown by --help)
COMMANDS: dict[str, str] = {
    "demo": "demo",
    "data": "data",
    "serve-judge": "serve_judge",
    "build-model": "build_model",
    "sft": "sft",
    "train": "train",
    "recipes": "recipes",
    "eval": "eval",
    "analyze": "analyze",
    "judge-bench": "judge_bench",
    "audit-rewards": "audit_rewards",
    "bench": "bench",
    "push": "push",
}

EPILOG = """\
Typical workflow:
  medrl data inspect --dataset vqa_rad              # look at the data
  medrl audit-rewards --recipe mrpo                 # can a policy buy reward with exploits?
  medrl train --recipe mrpo --dry-run               # check the recipe; batch, GRPOConfig
  medrl train --recipe mrpo --model <vlm> --data vqa_rad --judge reference --out runs/mrpo
                                                    # (MRPO App. D.1: RL without SFT warm-up;
                                                    #  optional: medrl sft ... --out runs/warmup)
  medrl eval  --model runs/mrpo --data vqa_rad:test --judge reference --out evals/mrpo
  medrl analyze evals/mrpo                          # FFP / FAR figures and report
  medrl push runs/mrpo --repo me/mrpo-model         # share the model and its card on the Hub
  medrl demo                                        # all of the above, offline, on real VQA-RAD

Run `medrl <command> --help` for the options of each command.
"""


def _epilog() -> str:
    """The workflow above and the exit codes, from the one table (:mod:`medrl.common.exit_codes`)."""
    import textwrap

    from medrl.common.exit_codes import summary

    codes = textwrap.fill(f"Exit codes (all commands; docs/first-hour.md): {summary()}.", width=96)
    return EPILOG + codes + "\n"


def _load(name: str):
    return importlib.import_module(f"medrl.commands.{COMMANDS[name]}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="medrl",
        description="RL post-training of medical vision-language models toward step-wise sound "
        "clinical reasoning (MRPO, ARMed, CAPO, MediX-R1, StepGRPO and their baselines).",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name in COMMANDS:
        if name == chosen:
            mod = _load(name)
            p = sub.add_parser(
                name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
        else:
            try:
                help_line = _load(name).HELP
            except ImportError:
                continue  # command not available in this install
            sub.add_parser(name, help=help_line)
    args = parser.parse_args(argv)
    # deprecation notices of the libraries underneath (gradient_checkpointing renames, ...) are
    # for developers of medrl, not its users; they would drown the progress bars
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|accelerate|peft)(\.|$)")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0 if not argv else 2
    return run_command(args, chosen or "medrl")


#: Commands whose ``--model`` is checked before anything else runs (fails in a second, not
#: after loading data). ``eval --rescore`` and ``train --dry-run`` need no model.
MODEL_COMMANDS = ("train", "sft", "eval", "data")


def run_command(args, name: str) -> int:
    """Run a parsed command: work offline when the hub cannot be reached, check ``--out`` and
    ``--model`` first, and turn known errors into one line and an exit code of :class:`medrl.common.exit_codes.Exit`
    (``MEDRL_TRACEBACK=1`` re-raises them)."""
    import os

    from medrl.common.exit_codes import for_error

    try:
        if name not in ("analyze", "push"):  # push needs the network and says so itself
            from medrl.models.loading import offline_first

            offline_first()
        from medrl.commands.run_folder import check_out

        check_out(args, name)  # an unusable --out, or one inside another run: one line, before any work
        model = getattr(args, "model", None)
        if name in MODEL_COMMANDS and isinstance(model, str) and model and not getattr(args, "dry_run", False):
            from medrl.models.loading import resolve_model_path

            if not _is_shorthand(model):
                _check_model_files(model, resolve_model_path(model),
                                   trust_remote_code=bool(getattr(args, "trust_remote_code", False)))
        return int(args._run(args) or 0)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - known classes only, others re-raised
        known = for_error(exc)
        if known is None or os.environ.get("MEDRL_TRACEBACK"):
            raise
        code, message = known
        from medrl.common.exit_codes import command_hint

        print(f"medrl {name}: {command_hint(message, name)}", file=sys.stderr)  # hints name only its options
        return int(code)


def _check_model_files(given: str, path: str, *, trust_remote_code: bool = False) -> None:
    """A model folder the command cannot use fails here with one line naming the file (exit 5),
    not with a traceback from the loader: a cut or garbage JSON file (tokenizer, processor
    config), weights cut short or whose header lies, non-finite weights, a tokenizer, processor or
    chat template that does not load or render (:func:`medrl.models.integrity.model_problem`)."""
    from medrl.common.exit_codes import ModelDamagedError
    from medrl.models.integrity import model_problem

    why = model_problem(path, trust_remote_code=trust_remote_code)
    if why is not None:
        where = path if str(path) == str(given) else f"{given} ({path})"
        hint = ("; the save that wrote it did not finish (a full disk, a process stopped while saving). Rerun the "
                "training command on its run folder to write it again, or pass another model") \
            if "cut short" in why or "is missing" in why else ""
        raise ModelDamagedError(f"--model {where}: {why}{hint}")


def _is_shorthand(model: str) -> bool:
    # tiny / default are built on first use (minutes): leave that to the command itself
    return model in ("tiny", "default") or model.startswith("tiny-")


def _version() -> str:
    from medrl import __version__

    return f"medrl {__version__}"


if __name__ == "__main__":
    sys.exit(main())
