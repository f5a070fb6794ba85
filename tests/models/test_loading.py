"""medrl.models: tiny offline VLM builder, loading (processor fixes, LoRA), generation, and the
proof that TRL's GRPOTrainer trains the tiny model given only its folder path."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _image(seed: int, size=(90, 120)):
    from PIL import Image

    rng = np.random.RandomState(seed)
    return Image.fromarray((rng.rand(*size, 3) * 255).astype("uint8"))


def _row(i: int, question: str = "Is there a nodule in the left lung?"):
    return {
        "prompt": [
            {"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
            {"role": "user", "content": [{"type": "image", "text": None}, {"type": "text", "text": question}]},
        ],
        "image": _image(i),
    }


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from medrl.models import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    from medrl.models import load_policy

    return load_policy(tiny_dir)


def test_build_tiny_vlm_folder(tiny_dir):
    names = {p.name for p in tiny_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "processor_config.json",
            "processing_medrl.py", "chat_template.jinja"} <= names
    cfg = json.loads((tiny_dir / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen2_5_VLForConditionalGeneration"]
    assert cfg["text_config"]["hidden_size"] == 64 and cfg["text_config"]["num_hidden_layers"] == 2
    proc_cfg = json.loads((tiny_dir / "processor_config.json").read_text())
    assert proc_cfg["processor_class"] == "ImageOnlyQwen2_5_VLProcessor"
    assert proc_cfg["auto_map"]["AutoProcessor"] == "processing_medrl.ImageOnlyQwen2_5_VLProcessor"


def test_tiny_tokenizer_and_processor(tiny):
    model, processor = tiny
    tok = processor.tokenizer
    assert type(processor).__name__ == "ImageOnlyQwen2_5_VLProcessor"
    assert tok.padding_side == "left" and tok.pad_token == "<|endoftext|>"
    # format tags are single, non-special tokens: decoding with skip_special_tokens keeps them
    for tag in ("<think>", "</think>", "<answer>", "</answer>"):
        assert len(tok(tag, add_special_tokens=False)["input_ids"]) == 1
    text = "<think>The left lung shows a nodule.</think><answer>yes</answer>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == text
    # byte-level BPE: arbitrary text round-trips (no unknown tokens)
    odd = "Ödem — 3 cm × 2 cm, ¿sí?"
    assert tok.decode(tok(odd, add_special_tokens=False)["input_ids"]) == odd
    # chat template renders the image placeholder and the generation prompt the Qwen way
    rendered = processor.apply_chat_template(_row(0)["prompt"], add_generation_prompt=True, tokenize=False)
    assert rendered == (
        "<|im_start|>system\nAnswer briefly.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
        "Is there a nodule in the left lung?<|im_end|>\n<|im_start|>assistant\n"
    )
    # 56 px images: at most (56/28)^2 = 4 image tokens after the 2x2 merge
    enc = processor(text=[rendered], images=[_image(0, (400, 400))], return_tensors="pt")
    assert int((enc["input_ids"] == model.config.image_token_id).sum()) == 4
    enc = processor(text=[rendered], images=[_image(0, (400, 200))], return_tensors="pt")
    assert int((enc["input_ids"] == model.config.image_token_id).sum()) == 2  # aspect kept: 56x28
    assert sum(p.numel() for p in model.parameters()) < 2_000_000


def test_tiny_texts_and_seed_change_the_build(tmp_path, tiny):
    from medrl.models import build_tiny_vlm, load_policy

    word = "pneumomediastinum"
    default_len = len(tiny[1].tokenizer(word, add_special_tokens=False)["input_ids"])
    path = build_tiny_vlm(tmp_path / "m", texts=[f"{word} is air in the mediastinum."] * 30, seed=1)
    model2, proc2 = load_policy(path)
    assert len(proc2.tokenizer(word, add_special_tokens=False)["input_ids"]) < default_len
    w1 = tiny[0].model.visual.patch_embed.proj.weight
    w2 = model2.model.visual.patch_embed.proj.weight
    assert w1.shape == w2.shape and not torch.equal(w1, w2)


def test_forward_with_image_and_backward(tiny):
    model, processor = tiny
    row = _row(1)
    text = processor.apply_chat_template(row["prompt"] + [
        {"role": "assistant", "content": [{"type": "text", "text": "<answer>yes</answer>"}]}], tokenize=False)
    enc = processor(text=[text], images=[row["image"]], return_tensors="pt")
    out = model(**enc, labels=enc["input_ids"])
    assert out.logits.shape == (1, enc["input_ids"].shape[1], model.config.text_config.vocab_size)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    grad = model.model.visual.patch_embed.proj.weight.grad
    assert grad is not None and grad.abs().sum() > 0  # the image reaches the loss
    model.zero_grad()


def test_generate_batched_equals_single(tiny):
    from medrl.models import generate

    model, processor = tiny
    rows = [_row(2), _row(3, "Which organ is shown in this long question about the image?")]
    batched = generate(model, processor, rows, max_new_tokens=5, batch_size=2, progress=False)
    single = [generate(model, processor, [r], max_new_tokens=5, progress=False)[0] for r in rows]
    assert len(batched) == 2 and all(isinstance(s, str) for s in batched)
    assert batched == single  # left padding does not change greedy outputs
    # and, sharper than the (random) tokens: the next-token logits of a left-padded batch equal
    # those of each prompt alone
    texts = [processor.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False) for r in rows]
    images = [r["image"] for r in rows]
    with torch.no_grad():
        enc = processor(text=texts, images=images, padding=True, return_tensors="pt")
        assert (enc["attention_mask"][:, 0] == 0).any()  # padding is on the left
        last = model(**enc).logits[:, -1]
        for i in range(2):
            one = processor(text=[texts[i]], images=[images[i]], return_tensors="pt")
            assert torch.allclose(model(**one).logits[0, -1], last[i], atol=1e-4)
    sampled = generate(model, processor, rows, max_new_tokens=5, temperature=1.0, seed=0, progress=False)
    assert sampled == generate(model, processor, rows, max_new_tokens=5, temperature=1.0, seed=0, progress=False)
    with pytest.raises(ValueError, match="image placeholders"):
        generate(model, processor, [{"prompt": _row(0)["prompt"]}], max_new_tokens=2, progress=False)


def test_processor_loads_with_remote_code_only(tiny_dir):
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(tiny_dir, trust_remote_code=True)
    assert type(proc).__name__ == "ImageOnlyQwen2_5_VLProcessor"
    assert hasattr(proc, "image_processor") and not hasattr(proc, "video_processor")


def test_lora_wrapping(tiny_dir, tmp_path):
    from medrl.models import load_policy
    from medrl.models.loading import POLICY_META, LoraSpec

    model, _ = load_policy(tiny_dir, lora=True)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert all("language_model" in n for n in trainable)  # vision tower untouched by default
    # 2 layers x 7 projections x (A, B)
    assert len(trainable) == 2 * 7 * 2
    lora_a = [p for n, p in model.named_parameters() if "q_proj.lora_A" in n][0]
    assert lora_a.shape[0] == 8
    assert model.peft_config["default"].lora_alpha == 32
    assert model.peft_config["default"].lora_dropout == 0.05

    # a folder's medrl_policy.json names modules trained in full next to LoRA
    (tiny_dir / POLICY_META).write_text(json.dumps({"train_in_full": ["visual"]}))
    try:
        model2, _ = load_policy(tiny_dir, lora={"r": 4, "lora_alpha": 8})
    finally:
        (tiny_dir / POLICY_META).unlink()
    names = [n for n, p in model2.named_parameters() if p.requires_grad]
    assert any("visual" in n and "lora_" not in n for n in names)
    assert LoraSpec.coerce({"r": 4, "lora_alpha": 8}).alpha == 8
    with pytest.raises(ValueError, match="unknown keys"):
        LoraSpec.coerce({"rank": 4})


def test_load_policy_errors_and_shorthand(tmp_path, monkeypatch):
    from medrl.models import load_policy
    from medrl.models.loading import resolve_model_path

    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_policy(tmp_path / "missing")
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    path = resolve_model_path("tiny")
    assert path.endswith("models/tiny") and (tmp_path / "cache/models/tiny/config.json").is_file()
    assert resolve_model_path("tiny") == path  # built once, then reused
    # offline (the tests' setting) a hub id must be in the local cache: an uncached one fails at once
    with pytest.raises(FileNotFoundError, match="no model folder or cached hub id 'org/some-model'"):
        resolve_model_path("org/some-model")


def test_grpo_trainer_one_step_from_folder_path(tiny_dir, tmp_path):
    """The real proof: TRL's GRPOTrainer loads the tiny model by path (policy, processor and,
    with beta > 0, the reference model from config._name_or_path) and takes a step."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    import medrl.models.processors  # noqa: F401  (registers the image-only processor)

    rows = [_row(i, f"Is there a nodule in region {i}?") for i in range(4)]
    ds = Dataset.from_dict({"prompt": [r["prompt"] for r in rows], "image": [r["image"] for r in rows],
                            "answer": ["yes", "no", "yes", "no"]})

    def length_reward(prompts, completions, **kw):
        assert kw["answer"] and len(kw["answer"]) == len(completions)
        return [float(len(str(c))) for c in completions]

    cfg = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, max_completion_length=6,
                     num_generations=2, per_device_train_batch_size=2, max_steps=1, report_to=[],
                     save_strategy="no", beta=0.04, learning_rate=1e-2, temperature=1.0)
    trainer = GRPOTrainer(model=str(tiny_dir), reward_funcs=length_reward, args=cfg, train_dataset=ds)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    after = dict(trainer.model.named_parameters())
    assert any(not torch.equal(before[n], after[n].detach()) for n in before)
    assert trainer.ref_model is not None
    assert trainer.state.global_step == 1


def test_cli_build_model_tiny(tmp_path, capsys):
    from medrl.cli import main
    from medrl.models import load_policy

    out = tmp_path / "m"
    assert main(["build-model", "tiny", "--out", str(out), "--hidden-size", "32", "--layers", "1",
                 "--image-size", "112"]) == 0
    model, processor = load_policy(out)
    assert model.config.text_config.hidden_size == 32 and model.config.text_config.num_hidden_layers == 1
    assert processor.image_processor.size["longest_edge"] == 112 * 112
    assert main(["build-model", "tiny", "--out", str(out)]) == 2  # never overwrites a model
    assert "already holds a model" in capsys.readouterr().err
    assert main(["build-model", "tiny", "--out", str(tmp_path / "bad"), "--hidden-size", "40"]) == 2


def test_stock_qwen_folder_falls_back_to_image_only(tiny_dir, tmp_path):
    """A folder saved with the stock Qwen2_5_VLProcessor (as on the Hub) loads without torchvision."""
    import shutil

    from transformers import AutoProcessor

    from medrl.models import load_policy

    stock = tmp_path / "stock"
    shutil.copytree(tiny_dir, stock)
    (stock / "processing_medrl.py").unlink()
    for name in ("processor_config.json", "tokenizer_config.json"):
        cfg = json.loads((stock / name).read_text())
        cfg.pop("auto_map", None)
        cfg["processor_class"] = "Qwen2_5_VLProcessor"
        (stock / name).write_text(json.dumps(cfg))
    try:
        AutoProcessor.from_pretrained(stock)
        stock_loads = True
    except (OSError, ImportError, ValueError):
        stock_loads = False
    model, processor = load_policy(stock)
    if not stock_loads:  # no torchvision: the video processor cannot be built
        assert type(processor).__name__ == "ImageOnlyQwen2_5_VLProcessor"
    assert processor.tokenizer.padding_side == "left"
    enc = processor(text=["<|vision_start|><|image_pad|><|vision_end|>hi"], images=[_image(0)], return_tensors="pt")
    assert model(**enc).logits.shape[0] == 1
