"""Shared by the reward audit tests (test_audit.py, test_audit_slake.py: one dataset per module, so
that `make test`'s workers, which take a module each, audit the two datasets at once)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture()
def strict_audit(data_dir):
    """``strict_audit(source)``: `medrl audit-rewards --strict --n 32` for every built-in recipe
    with the reference judge: 32 records (16 open, 16 closed) of ``source``, one run per distinct
    reward set (recipes sharing rewards share a run), exploits and metamorphic variants; then the
    CLI itself on the medix_r1 recipe exits 0."""
    from medrl.cli import main
    from medrl.data import load_records
    from medrl.judges import build_judge
    from medrl.rewards.audit import format_report, run_audit, select_records
    from medrl.train.recipes import build_reward_funcs, list_recipes, load_recipe, recipe_uses_judge

    judge = build_judge("reference")

    def run(source: str) -> None:
        records = select_records(load_records(source, data_dir=data_dir), 32)
        seen: dict[str, object] = {}
        for name in list_recipes():
            recipe = load_recipe(name)
            if not recipe.rewards:
                continue
            key = json.dumps([recipe.rewards, recipe.data.get("prompt_style"), recipe.algorithm["correctness"]],
                             sort_keys=True, default=str)
            if key in seen:
                continue
            funcs, _ = build_reward_funcs(recipe, judge=judge if recipe_uses_judge(recipe) else None)
            rep = seen[key] = run_audit(funcs, records, judge=judge, correctness=recipe.algorithm["correctness"],
                                        prompt_style=recipe.data.get("prompt_style", "think_answer"))
            print(f"recipe {name} on {source}:\n{format_report(rep, max_flags=10)}")
            assert rep.ok, f"recipe {name} on {source}:\n{format_report(rep)}"
        assert main(["audit-rewards", "--recipe", "medix_r1", "--data", source, "--data-dir", str(data_dir),
                     "--n", "32", "--strict"]) == 0

    return run
