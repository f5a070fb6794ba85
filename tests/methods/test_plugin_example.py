"""The method example of docs/architecture.md, run exactly as printed: a new method plugged in
from its own file, listed in a recipe by path, with no change to the trainer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def example_code() -> str:
    text = DOC.read_text()
    block = re.search(r"<!-- plugin-example:start -->\n```python\n(.*?)```\n<!-- plugin-example:end -->", text, re.S)
    assert block, "docs/architecture.md lost its plugin example"
    return block.group(1)


def test_the_example_is_about_forty_lines():
    assert 30 <= len(example_code().strip().splitlines()) <= 45


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    path = tmp_path_factory.mktemp("plugin") / "majority.py"
    path.write_text(example_code())
    return path


def test_the_example_method_trains_through_a_recipe(plugin, data_dir, tmp_path):
    from medrl.data import load_records, to_hf_dataset
    from medrl.judges import build_judge
    from medrl.models import build_tiny_vlm
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe
    from medrl.train.teacher import install_teacher

    records = load_records("vqa_rad", split="train", data_dir=data_dir, open_only=True, limit=2)
    recipe = load_recipe("grpo", profile="cpu", overrides=[
        f"methods=['{plugin}:Majority']", "grpo.max_completion_length=32", "grpo.per_device_train_batch_size=4",
        "grpo.max_steps=1", "grpo.save_strategy='no'", "algorithm.log_credit_every=0"],
        rewards=["majority_agreement=1.0"])
    assert recipe.methods == [f"{plugin}:Majority"]

    def text(rec, answer):
        return f"<think>This is a {rec.modality or 'medical'} image.</think><answer>{answer}</answer>"

    tiny = build_tiny_vlm(tmp_path / "tiny", texts=[r.question for r in records] + [text(r, r.answer) for r in records],
                          seed=0)
    tr = train_rl(recipe, tiny, records, tmp_path / "run", judge=build_judge("reference"), train=False,
                  grpo_overrides={"report_to": "none"}).trainer
    assert [type(m).__name__ for m in tr.methods] == ["Majority"]
    answers = iter([records[0].answer, records[0].answer, records[1].answer, "banana"])
    install_teacher(tr, records, lambda rec: text(rec, next(answers)), replace_all=True)
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    ds = to_hf_dataset(records, "think_answer")
    tr._generate_and_score_completions([dict(ds[i]) for i in (0, 0, 1, 1)])
    col = tr._last_rewards[:, list(tr.reward_func_names).index("majority_agreement")]
    # group 1 agrees (2 votes): both rollouts earn 1; group 2 splits 1-1: no majority, not applicable
    assert col[:2].tolist() == [1.0, 1.0] and torch.isnan(col[2:]).all()
