"""The model card of final/ is ready for the Hub: base_model (a hub id, never a local path),
datasets, the paper's arXiv tag in the front matter; the key metrics and the `medrl train` command
that reproduces the run in the body; no local path anywhere."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


def _front_matter(text: str) -> dict:
    import yaml

    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def _no_local_path(text: str, *roots) -> None:
    import tempfile
    from pathlib import Path

    for root in (*roots, Path.home(), os.getcwd(), tempfile.gettempdir()):
        assert str(root) not in text, root


def test_a_card_from_a_local_warm_up_names_the_hub_model_it_came_from(tmp_path):
    from medrl.train.model_card import model_card

    base = tmp_path / "warmup" / "final"
    base.mkdir(parents=True)
    (base / "config.json").write_text(json.dumps({"_name_or_path": "Qwen/Qwen2.5-VL-3B-Instruct"}))
    card = model_card(base_model=base, method="mrpo (RL, TRL GRPOTrainer)", recipe="mrpo",
                      paper="MRPO (Jung et al. 2026, arXiv 2606.31825)", datasets=["flaviagiammarino/vqa-rad"],
                      metrics={"reward": 0.5, "train_runtime": 12.0}, steps=2,
                      command="medrl train --recipe mrpo --model Qwen/Qwen2.5-VL-3B-Instruct --out mrpo")
    meta = _front_matter(card)
    assert meta["base_model"] == "Qwen/Qwen2.5-VL-3B-Instruct" and meta["datasets"] == ["flaviagiammarino/vqa-rad"]
    assert "arxiv:2606.31825" in meta["tags"] and "mrpo" in meta["tags"] and meta["library_name"] == "transformers"
    assert "a local fine-tune of `Qwen/Qwen2.5-VL-3B-Instruct`" in card and "| reward | 0.5 |" in card
    assert "```bash\nmedrl train --recipe mrpo" in card and "None" not in card
    _no_local_path(card, tmp_path)


def test_a_card_from_a_local_folder_of_unknown_origin_has_no_base_model(tmp_path):
    from medrl.train.model_card import model_card

    base = tmp_path / "models" / "mine"
    base.mkdir(parents=True)
    (base / "config.json").write_text(json.dumps({"_name_or_path": str(base)}))
    card = model_card(base_model=base, method="sft", datasets=["vqa_rad"])
    assert "base_model" not in _front_matter(card) and "a local model folder" in card
    _no_local_path(card, tmp_path)


def test_reproduce_command_and_datasets_carry_no_local_path(tmp_path):
    from medrl.train.model_card import dataset_names, reproduce_command

    assert dataset_names("vqa_rad:train") == ["flaviagiammarino/vqa-rad"]
    assert dataset_names("pathvqa+slake") == ["flaviagiammarino/path-vqa", "BoKelvin/SLAKE"]
    assert dataset_names(f"jsonl:{tmp_path}/curated.jsonl") == ["curated"]
    assert dataset_names("hf:MBZUAI/medix-rl-data") == ["MBZUAI/medix-rl-data"]
    model = tmp_path / "local_model"
    model.mkdir()
    cmd = reproduce_command(str(tmp_path / "my.yaml"), model, f"jsonl:{tmp_path}/curated.jsonl",
                            overrides=[f"data.rationales={tmp_path}/r.json", "grpo.max_steps=5"],
                            rewards=[f"{tmp_path}/rw.py:fn=0.5"], lora=True, out=tmp_path / "runs" / "mine")
    assert cmd == ("medrl train --recipe my.yaml --model BASE_MODEL --data jsonl:curated.jsonl --set "
                   "data.rationales=r.json --set grpo.max_steps=5 --reward rw.py:fn=0.5 --lora --out mine")
    assert reproduce_command("grpo", "tiny", "vqa_rad").startswith("medrl train --recipe grpo --model tiny --data vqa_rad")


def test_train_writes_a_hub_ready_card_with_metrics_and_the_command(tmp_path, data_dir):
    """`medrl train` end to end (one step on the tiny model): the card of final/ and of the run."""
    from medrl.cli import main
    from medrl.models import build_tiny_vlm

    tiny = build_tiny_vlm(tmp_path / "models" / "tiny")
    out = tmp_path / "runs" / "grpo_try"
    assert main(["train", "--recipe", "grpo", "--model", str(tiny), "--data", "vqa_rad", "--data-dir", str(data_dir),
                 "--profile", "cpu", "--limit", "2", "--max-steps", "1", "--set", "grpo.report_to=[]",
                 "--out", str(out)]) == 0
    for folder in (out, out / "final"):
        card = (folder / "README.md").read_text()
        meta = _front_matter(card)
        assert meta["datasets"] == ["flaviagiammarino/vqa-rad"] and "base_model" not in meta
        assert "## Results" in card and "| reward |" in card and "| train_runtime |" in card
        assert ("medrl train --recipe grpo --model BASE_MODEL --data vqa_rad --profile cpu --set "
                "'grpo.report_to=[]' --set grpo.max_steps=1 --set sft.max_steps=1 --limit 2 --judge reference "
                "--out grpo_try") in card
        _no_local_path(card, tmp_path, data_dir)
