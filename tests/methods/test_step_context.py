"""A method sees a step, not a trainer: hooks take a :class:`medrl.methods.StepContext` and run
without TRL on one built by hand; a method owns its maths (MRPO's Eq. 7 and its estimator in
``methods/mrpo.py``, defaults and choices written once) and its stages (registered from its
file); the trainer keys method state by ``label()``."""

from __future__ import annotations

import ast
import inspect
import re
import typing
from pathlib import Path

import pytest
import torch

from medrl.methods import HOOK_ORDER, STAGES, Generated, MedBatch, Method, StepContext

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ the context


def test_every_hook_takes_the_context_not_the_trainer():
    for hook in HOOK_ORDER[:-1]:
        params = list(inspect.signature(getattr(Method, hook)).parameters)
        assert params[1] == "ctx", (hook, params)
        assert inspect.signature(getattr(Method, hook)).parameters["ctx"].annotation in ("StepContext", StepContext)


def test_rows_and_whole_groups():
    ctx = StepContext.for_test(num_generations=4, rows=range(4, 8))
    assert ctx.whole_groups and ctx.group_index() == [1, 1, 1, 1]
    # two processes holding 2 rows each of one group of 4: partial groups, and the context says so
    half = StepContext.for_test(num_generations=4, rows=range(2, 4), process_index=1, num_processes=2)
    assert not half.whole_groups and half.group_index() == [0, 0] and not half.is_main_process


def test_mrpo_hooks_run_without_trl():
    """MRPO's log hook on a hand-built context: the reshaped share, logged through ctx.log."""
    from medrl.methods.mrpo import MRPO

    m = MRPO()
    logged: dict = {}
    ctx = StepContext.for_test(reward_names=["mrpo_answer", "mrpo_process"], metrics=logged,
                               args=type("A", (), {"importance_sampling_level": "token", "loss_type": "dapo",
                                                   "off_policy_mask_threshold": None})())
    m.setup(ctx)
    m._judged = [True, True, False]
    batch = MedBatch(inputs=[{}] * 3, local_rewards=torch.tensor([[0.2, 1.0], [0.9, 1.0], [0.1, 0.0]]))
    m.log(ctx, batch)
    assert logged == {"mrpo/reshaped_frac": [1 / 3]}  # row 0 judged and R_ans <= tau; row 1 above tau; row 2 unjudged


def test_capo_rolls_out_through_ctx_generate():
    from PIL import Image

    from medrl.methods.capo import CAPO

    seen = {}

    def generate(prompts, images, n):
        seen.update(prompts=prompts, images=images, n=n)
        return Generated([f"<answer>{i}</answer>" for i in range(len(prompts))], [[1, 2, 3]] * len(prompts))

    logged: dict = {}
    ctx = StepContext.for_test(generate=generate, metrics=logged, num_generations=2, global_step=3)
    img = Image.new("RGB", (16, 16), "white")
    rows = [{"prompt": [{"role": "user", "content": "q"}], "image": img, "record_id": "r1"}] * 2
    batch = MedBatch(inputs=rows)
    CAPO({"kind": "mask"}).before_generation(ctx, batch)
    assert batch.corrupted_completions == ["<answer>0</answer>", "<answer>1</answer>"]
    assert seen["n"] == 2 and len(seen["images"]) == 2 and seen["images"][0][0].size == (16, 16)
    assert logged == {"capo/corrupted_mean_length": [3.0]}


def test_estimate_advantages_takes_the_context(monkeypatch):
    """A plugin estimator sees this process's group ids and whether the groups are whole."""
    from medrl.advantages import ADVANTAGES
    from medrl.methods.base import estimate_advantages

    seen = {}

    def est(*, rewards, mask, index, config=None, whole_groups=None, **inputs):
        seen.update(index=index.tolist(), whole=whole_groups, config=config)
        return torch.zeros(mask.shape)

    ADVANTAGES.names()
    monkeypatch.setitem(ADVANTAGES._items, "probe_est", est)

    class Provider(Method):
        name, advantage = "provider", "probe_est"

    ctx = StepContext.for_test(num_generations=2, rows=range(2, 5), reward_names=["r"])
    batch = MedBatch(inputs=[{}] * 3, local_rewards=torch.zeros(3, 1), seq_advantages=torch.zeros(3),
                     out={"completion_mask": torch.ones(3, 4), "advantages": torch.zeros(3)})
    out = estimate_advantages(ctx, batch, "probe_est", [Provider()])
    assert out.shape == (3, 4) and seen["index"] == [1, 1, 2] and seen["whole"] is False


# ------------------------------------------------------------------ a method owns its maths


def test_mrpo_eq7_lives_in_its_method_file_and_stays_importable_from_advantages():
    import medrl.advantages as adv
    import medrl.methods.mrpo as mrpo

    assert adv.get_advantage_fn("mrpo") is mrpo.mrpo_estimator
    assert adv.mrpo_token_advantages is mrpo.mrpo_token_advantages  # the README's import keeps working
    assert adv.SHAPING is mrpo.SHAPING and adv.shaping_factor is mrpo.shaping_factor
    assert mrpo.mrpo_token_advantages.__module__ == "medrl.methods.mrpo"
    with pytest.raises(AttributeError):
        adv.no_such_name  # noqa: B018


def test_mrpo_defaults_and_choices_are_written_once():
    from medrl.methods.mrpo import SHAPING, STRATEGIES, MRPOConfig, mrpo_token_advantages

    params = inspect.signature(mrpo_token_advantages).parameters
    cfg = MRPOConfig()
    assert (cfg.tau, cfg.shaping, cfg.strategy) == (params["tau"].default, params["shaping"].default,
                                                    params["strategy"].default) == (0.6, "exponential", "selective")
    hints = typing.get_type_hints(MRPOConfig)
    assert typing.get_args(hints["shaping"]) == tuple(SHAPING)
    assert typing.get_args(hints["strategy"]) == STRATEGIES
    source = (ROOT / "medrl" / "methods" / "mrpo.py").read_text()
    assert source.count('"selective", "full", "soft"') == 1 and source.count('"exponential": lambda') == 1


def test_advantages_module_names_no_paper():
    from medrl.methods import METHODS, get_method

    text = (ROOT / "medrl" / "advantages.py").read_text()
    words = {n for n in METHODS.names()} | {"mrpo", "armed", "capo", "medix", "stepgrpo"}
    words |= {get_method(n).paper.split(" ")[0] for n in METHODS.names()}
    found = sorted({w for w in words if re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", text, re.I)})
    assert not found, found


# ------------------------------------------------------------------ stages


def test_method_stages_are_registered_from_their_method_files():
    assert STAGES.get("knowledge_injection").run.__module__ == "medrl.methods.armed"
    assert STAGES.get("key_steps").run.__module__ == "medrl.methods.stepgrpo"
    assert STAGES.get("knowledge_injection").uses_judge and STAGES.get("key_steps").uses_judge


def test_train_names_no_registered_stage():
    kinds = set(STAGES.names())
    found = []
    for path in sorted((ROOT / "medrl" / "train").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in kinds:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
            elif isinstance(node, (ast.Name, ast.Attribute, ast.FunctionDef)):
                name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", "")
                if any(k in name for k in kinds):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not found, found


def test_a_registered_stage_runs_in_the_pipeline(tmp_path, monkeypatch):
    """A stage a plugin registers runs between the pipeline's own, with its options, and hands
    its records on; a resumed pipeline calls it again with done=True."""
    import medrl.train.pipeline as pipeline
    from medrl.methods.stages import register_stage
    from medrl.train.recipes import load_recipe

    monkeypatch.setattr(STAGES, "_items", dict(STAGES._items))
    calls = []

    @register_stage("halve", help="keep every other record")
    def halve(run):
        calls.append((run.done, len(run.records), dict(run.options)))
        run.records = run.records[::2]

    trained = []
    monkeypatch.setattr(pipeline, "train_rl", lambda recipe, model, records, folder, **k: trained.append(len(records))
                        or pipeline.RLResult(None, folder, folder / "final"))
    recipe = load_recipe("grpo", check_trl=False)
    recipe.stages = [{"kind": "halve", "options": {"note": 1}}, {"kind": "rl"}]
    pipeline.run_recipe(recipe, tmp_path / "m0", list(range(6)), tmp_path / "run")
    assert calls == [(False, 6, {"note": 1})] and trained == [3]
    pipeline.run_recipe(recipe, tmp_path / "m0", list(range(6)), tmp_path / "run")  # both done: read back
    assert calls[-1] == (True, 6, {"note": 1}) and trained == [3]


# ------------------------------------------------------------------ method state by label


def test_method_state_is_keyed_by_label(tmp_path):
    """A method without a ``name`` is saved under its class name (its label), as the logs show it."""
    import json
    from types import SimpleNamespace

    from medrl.train.trainer import METHOD_STATE_FILE, MedGRPOTrainer

    class Counter(Method):
        def state_dict(self):
            return {"n": 3}

        def load_state_dict(self, state):
            self.n = state["n"]

    (tmp_path / METHOD_STATE_FILE).write_text(json.dumps({"Counter": {"n": 3}}))
    fake = SimpleNamespace(methods=[Counter()])
    assert MedGRPOTrainer._load_method_state(fake, str(tmp_path)) == ["Counter"] and fake.methods[0].n == 3
