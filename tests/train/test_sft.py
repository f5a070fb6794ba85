"""medrl.train.sft and `medrl sft`: records -> TRL SFTTrainer on the tiny VLM (completion-only
loss on <think>/<answer> targets), run folder, LoRA merge, resume."""

from __future__ import annotations

import json

import pytest
from synthetic import synthetic_records

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

QUESTIONS = ["Is there a nodule in the left lung?", "Which organ is shown?", "Is the heart enlarged?",
             "What is the modality?"]
ANSWERS = ["yes", "liver", "no", "CT"]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return synthetic_records(tmp_path_factory.mktemp("imgs"), QUESTIONS, ANSWERS,
                             gold_reasoning=lambda i: "The image is a chest CT. The finding answers it." if i % 2 == 0 else None)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from medrl.models import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model")


def test_sft_dataset_targets(records):
    from medrl.data.prompts import format_target
    from medrl.train.sft import sft_dataset

    ds = sft_dataset(records, "think_answer")
    assert set(ds.column_names) == {"record_id", "prompt", "completion", "image"}
    row = ds[0]
    assert row["completion"][0]["role"] == "assistant"
    assert row["completion"][0]["content"][0]["text"] == format_target(records[0], "think_answer")
    assert row["completion"][0]["content"][0]["text"] == (
        "<think>The image is a chest CT. The finding answers it.</think><answer>yes</answer>")
    assert row["prompt"][-1]["content"][-1]["text"] == QUESTIONS[0]
    assert ds[1]["completion"][0]["content"][0]["text"].startswith("<think>")  # evidence-based reasoning
    assert ds.with_format(None)[0]["image"] is not None
    from dataclasses import replace

    with pytest.raises(ValueError, match="'r0' has no image"):
        sft_dataset([replace(records[0], images=[])])


def test_options_validation():
    from medrl.train.sft import DEFAULTS, resolve_options

    ours, kw = resolve_options({"max_steps": 3, "lora": None})
    assert ours == {"lora": None} and kw["max_steps"] == 3 and kw["learning_rate"] == DEFAULTS["learning_rate"]
    assert DEFAULTS["lora"] == {"r": 8, "alpha": 32, "dropout": 0.05} and DEFAULTS["learning_rate"] == 2e-5
    assert DEFAULTS["num_train_epochs"] == 3
    with pytest.raises(ValueError, match=r"unknown keys \['lerning_rate'\]"):
        resolve_options({"lerning_rate": 1e-4})


def test_completion_only_labels(records, tiny_dir, tmp_path):
    """The loss covers exactly the target text and the end-of-turn token."""
    from trl import SFTConfig, SFTTrainer

    from medrl.models import load_policy
    from medrl.train.sft import sft_dataset

    model, processor = load_policy(tiny_dir)
    ds = sft_dataset(records[:2])
    args = SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[], completion_only_loss=True,
                     remove_unused_columns=False, per_device_train_batch_size=2)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=processor)
    batch = trainer.data_collator([ds[0], ds[1]])
    tok = processor.tokenizer
    for i in range(2):
        kept = batch["labels"][i][batch["labels"][i] != -100]
        target = ds[i]["completion"][0]["content"][0]["text"]
        assert tok.decode(kept) == target + "<|im_end|>\n"
    assert "pixel_values" in batch


def test_train_sft_two_steps_lora(records, tiny_dir, tmp_path):
    from medrl.models import load_policy
    from medrl.train.sft import train_sft

    out = tmp_path / "run"
    final = train_sft(tiny_dir, records, out, options={
        "max_steps": 2, "per_device_train_batch_size": 2, "learning_rate": 5e-2, "save_steps": 1})
    assert final == out / "final"
    cfg = (out / "sft_config.yaml").read_text()
    assert "lora:" in cfg and "r: 8" in cfg and "alpha: 32" in cfg and "max_steps: 2" in cfg
    assert list((out / "runs").rglob("events.out.tfevents.*"))  # TensorBoard
    logs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("loss" in r for r in logs)
    assert (out / "checkpoint-2").is_dir()
    # LoRA merged: the final folder is a plain model that differs from the start in the LM only
    assert not (final / "adapter_config.json").exists()
    base, _ = load_policy(tiny_dir)
    tuned, proc = load_policy(out)  # a run folder resolves to its final model
    assert type(proc).__name__ == "ImageOnlyQwen2_5_VLProcessor"
    b, t = dict(base.named_parameters()), dict(tuned.named_parameters())
    changed = {n for n in b if not torch.equal(b[n], t[n])}
    assert changed and all("language_model" in n for n in changed)
    assert any("q_proj" in n for n in changed)


def test_cli_full_finetune_then_resume(records, tiny_dir, tmp_path):
    from medrl.cli import main
    from medrl.data import write_jsonl

    data = write_jsonl(records, tmp_path / "recs.jsonl")
    out = tmp_path / "cli"
    # the JSONL names the fixture's images by absolute path, outside its own folder
    common = ["sft", "--model", str(tiny_dir), "--data", f"jsonl:{data}", "--out", str(out), "--no-lora",
              "--allow-outside-data-root",
              "--lr", "1e-2", "--batch-size", "2", "--set", "save_steps=1"]
    assert main(common + ["--max-steps", "1"]) == 0
    first = json.loads((out / "train_result.json").read_text())
    assert (out / "checkpoint-1").is_dir() and (out / "final" / "model.safetensors").is_file()
    # resuming must restore checkpoint-1's weights: Trainer's own loader cannot (saved keys are
    # in the original format, transformers#43701); the SFT trainer reloads them through
    # from_pretrained (medrl.train.trainer.reload_renamed_weights)
    from types import SimpleNamespace

    from medrl.models import load_policy
    from medrl.train.sft import _trainer_class

    base, _ = load_policy(tiny_dir)
    ckpt_model, _ = load_policy(out / "checkpoint-1")

    class Base:
        def _load_from_checkpoint(self, ckpt, model=None):
            pass  # stands in for Trainer's loader, which restores nothing here

    trainer = object.__new__(_trainer_class(Base))
    trainer.__dict__.update(is_deepspeed_enabled=False, is_fsdp_enabled=False, model=base,
                            accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    trainer._load_from_checkpoint(str(out / "checkpoint-1"))
    ck = dict(ckpt_model.named_parameters())
    assert all(torch.equal(p, ck[n]) for n, p in base.named_parameters())
    assert main(common + ["--max-steps", "2", "--resume"]) == 0
    assert (out / "checkpoint-2").is_dir()
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    assert first  # metrics of the first run were written
    # full fine-tuning trains the vision tower too
    from safetensors.torch import load_file

    a = load_file(tiny_dir / "model.safetensors")
    b = load_file(out / "final" / "model.safetensors")
    assert any(not torch.equal(a[k], b[k]) for k in a if "visual" in k)
    assert main(["sft", "--model", "tiny", "--out", str(out), "--set", "lerning_rate=1"]) == 2
