"""Every model family the papers train, built tiny and offline, through every training path.

Per family (``medrl.models.families``): the folder loads with the family's real model and
processor classes; the chat template renders the family's layout and its assistant mask covers
exactly the assistant text; batched generation (the ``medrl eval`` HF backend) equals one prompt
at a time (left padding, position ids); SFT with LoRA on the language model's projections only
(vision tower untouched) and full fine-tuning; GRPO and MRPO two steps each with teacher
rollouts; MRPO's token advantages land on the step tokens (each step's token span decodes back
to the step text); save, reload and resume give identical logits.

``DEFAULT_FAMILY`` runs in the default suite; the other families run under ``-m slow``
(``make test-slow``), one family at a time if wanted: ``pytest -m slow -k gemma3 tests/models/test_families.py``.
"""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from medrl.models.families import FAMILIES, FAMILY_NAMES  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

DEFAULT_FAMILY = "qwen3_vl"  # in the default run; Qwen2.5-VL is covered by the other test files
MAX_LEN = 40  # completion tokens; the teacher texts fit in it

from synthetic import ANSWERS, QUESTIONS, score_right_and_wrong, synthetic_records, teacher_text, wrong_text  # noqa: E402

# The processor class each family must load with.
PROCESSOR_CLASS = {
    "qwen2_vl": "ImageOnlyQwen2VLProcessor", "qwen2_5_vl": "ImageOnlyQwen2_5_VLProcessor",
    "qwen3_vl": "ImageOnlyQwen3VLProcessor", "internvl": "ImageOnlyInternVLProcessor",
    "llava_next": "LlavaNextProcessor", "smolvlm": "ImageOnlySmolVLMProcessor", "gemma3": "Gemma3Processor",
}


# Each family's assistant generation prompt and end-of-turn token, as its own chat template has them.
GENERATION_PROMPT = {
    "qwen2_vl": ("<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>"),
    "qwen2_5_vl": ("<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>"),
    "qwen3_vl": ("<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>"),
    "internvl": ("<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>"),
    "llava_next": (" [/INST] ", "</s>"),
    "smolvlm": ("<end_of_utterance>\nAssistant:", "<end_of_utterance>"),
    "gemma3": ("<end_of_turn>\n<start_of_turn>model\n", "<end_of_turn>"),
}


def families(default_too: bool = True):
    return [pytest.param(f, marks=() if (f == DEFAULT_FAMILY and default_too) else pytest.mark.slow, id=f)
            for f in FAMILY_NAMES]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return synthetic_records(tmp_path_factory.mktemp("imgs"), QUESTIONS, ANSWERS,
                             size=lambda i: (64 + 24 * i, 64 + 8 * (3 - i)),  # different sizes and aspect ratios
                             gold_reasoning=lambda i: "This is a chest CT. The finding answers the question.")


_BUILT: dict = {}


@pytest.fixture(scope="module")
def build(tmp_path_factory, records):
    """family -> tiny model folder (built once per module)."""
    from medrl.models import build_tiny_vlm

    texts = [r.question for r in records] + [f(r) for r in records for f in (teacher_text, wrong_text)]

    def _build(family):
        if family not in _BUILT:
            _BUILT[family] = build_tiny_vlm(tmp_path_factory.mktemp(family) / "model", texts=texts, family=family)
        return _BUILT[family]

    return _build


@pytest.fixture(scope="module")
def judge():
    from medrl.judges import build_judge

    return build_judge("reference")


def _logits(model, processor, records):
    """Logits of one batch of chat prompts with images (eval mode, no grad)."""
    from medrl.models.generation import _nested_images, to_chat

    chats = [to_chat(r) for r in records]
    texts = [processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m, _ in chats]
    images = [imgs for _, imgs in chats] if _nested_images(processor) else [i for _, imgs in chats for i in imgs]
    enc = processor(text=texts, images=images, padding=True, return_tensors="pt")
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(**enc).logits
    model.train(was)
    return out


# ------------------------------------------------------------------------------ build / template / eval


@pytest.mark.parametrize("family", families())
def test_build_template_and_batched_generation(family, build, records):
    from transformers import AutoConfig

    from medrl.eval.runner import build_generate_fn
    from medrl.models import load_policy

    path = build(family)
    fam = FAMILIES[family]
    model, processor = load_policy(path)
    assert type(model).__name__ == fam.model_class
    assert type(processor).__name__ == PROCESSOR_CLASS[family]
    assert AutoConfig.from_pretrained(path).model_type == model.config.model_type
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params < 5_000_000
    tok = processor.tokenizer
    assert tok.padding_side == "left" and tok.pad_token is not None
    for t in ("<think>", "</think>", "<answer>", "</answer>"):
        assert len(tok(t, add_special_tokens=False)["input_ids"]) == 1  # format tags are whole tokens

    # Chat template: the family's generation prompt ends the prompt; the assistant mask (TRL's
    # assistant-only loss) covers exactly the assistant text plus its end-of-turn token.
    rec = records[0]
    msgs = [{"role": "system", "content": "Be careful."},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": rec.question}]}]
    prompt = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    gen_prompt, end_of_turn = GENERATION_PROMPT[family]
    assert prompt.endswith(rec.question + gen_prompt), prompt
    assert "Be careful." in prompt and prompt.count(rec.question) == 1
    assert fam.eos == end_of_turn and tok.eos_token == end_of_turn
    full = msgs + [{"role": "assistant", "content": [{"type": "text", "text": teacher_text(rec)}]}]
    enc = tok.apply_chat_template(full, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids = [t for t, m in zip(enc["input_ids"], enc["assistant_masks"]) if m]
    assert tok.decode(ids) == teacher_text(rec) + end_of_turn

    # Image placeholders expand to as many tokens as the vision tower makes features.
    out = _logits(model, processor, records[:2])
    assert out.shape[0] == 2 and torch.isfinite(out).all()

    # Batched generation as `medrl eval` runs it equals one prompt at a time (left padding,
    # position ids, per-prompt image tokens).
    gen = build_generate_fn(str(path), max_new_tokens=6, batch_size=4)
    batched = gen(records)
    single = [gen([r])[0] for r in records]
    assert batched == single and len(batched) == len(records)


# ------------------------------------------------------------------------------ SFT: LoRA and full


def _sft(path, records, out, resume=None, callbacks=(), **options):
    from medrl.train.sft import train_sft

    opts = {"max_steps": 2, "per_device_train_batch_size": 2, "learning_rate": 5e-2, "report_to": "none",
            "save_steps": 1, **options}
    return train_sft(path, records, out, options=opts, resume=resume, callbacks=callbacks)


@pytest.mark.parametrize("family", families())
def test_sft_lora_on_language_projections_and_full_finetune(family, build, records, tmp_path):
    from medrl.models import load_policy

    path = build(family)
    base, _ = load_policy(path)
    b = {n: p.detach().clone() for n, p in base.named_parameters()}

    lora_final = _sft(path, records, tmp_path / "lora")  # LoRA is train_sft's default
    cfg = (tmp_path / "lora" / "sft_config.yaml").read_text()
    assert "lora_resolved" in cfg and ("language_model" in cfg or "text_model" in cfg)
    tuned, _ = load_policy(lora_final)
    changed = {n for n, p in tuned.named_parameters() if not torch.equal(p, b[n])}
    assert changed, "LoRA SFT changed nothing"
    assert all(("language_model" in n or "text_model" in n) and n.rsplit(".", 2)[-2].endswith("_proj")
               for n in changed), sorted(changed)[:5]

    full_final = _sft(path, records, tmp_path / "full", lora=None)
    tuned, _ = load_policy(full_final)
    changed = {n for n, p in tuned.named_parameters() if not torch.equal(p, b[n])}
    vision = ("visual", "vision_tower", "vision_model")
    assert any(any(v in n for v in vision) for n in changed), "full fine-tuning left the vision tower alone"
    assert any("language_model" in n or "text_model" in n for n in changed)


# ------------------------------------------------------------------------------ GRPO / MRPO


def _rl_trainer(name, path, records, judge, out, overrides=()):
    from medrl.train.pipeline import train_rl
    from medrl.train.recipes import load_recipe

    recipe = load_recipe(name, profile="cpu", overrides=[f"grpo.max_completion_length={MAX_LEN}",
                                                         "grpo.report_to='none'", *overrides])
    return recipe, train_rl(recipe, path, records, out, judge=judge, train=False).trainer


@pytest.mark.parametrize("family", families())
@pytest.mark.parametrize("name", ["grpo", "mrpo"])
def test_two_rl_steps_with_teacher_rollouts(family, name, build, records, judge, tmp_path):
    from medrl.train.teacher import install_teacher

    recipe, tr = _rl_trainer(name, build(family), records, judge, tmp_path / name,
                             overrides=["grpo.save_strategy='no'"])
    install_teacher(tr, records, teacher_text, every=2)
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters() if p.requires_grad}
    tr.train()
    assert tr.state.global_step == 2
    logs = [h for h in tr.state.log_history if "reward" in h]
    assert logs and any((h.get("reward_std") or 0) > 0 for h in logs), "no reward spread"
    for r in recipe.rewards:
        vals = [h[f"rewards/{r['name']}/mean"] for h in logs if f"rewards/{r['name']}/mean" in h]
        assert vals and all(v == v for v in vals), f"reward {r['name']} was not computed"
    assert any(not torch.equal(p.detach(), before[n]) for n, p in tr.model.named_parameters() if n in before)
    if name == "mrpo":
        assert "mrpo/reshaped_frac" in logs[-1] and "process_reward" in logs[-1]


@pytest.mark.parametrize("family", families())
def test_mrpo_token_advantages_land_on_step_tokens(family, build, records, judge, tmp_path):
    """Fixed rollouts (right / wrong answer per prompt): each step's token span decodes back to
    the step's text, and MRPO's advantages differ from A_i only inside the step spans of the
    wrong-answer rollouts."""
    check_mrpo_alignment(family, build(family), records, judge, tmp_path)


def check_mrpo_alignment(family, path, records, judge, tmp_path, overrides=()):
    """The body of the test above (also run by the GPU suite with bf16 overrides)."""
    from medrl.answers.completion import completion_token_offsets, step_token_spans

    _, tr = _rl_trainer("mrpo", path, records, judge, tmp_path,
                        overrides=[f"grpo.max_completion_length={MAX_LEN + 16}", "grpo.per_device_train_batch_size=4",
                                   *overrides])
    out = score_right_and_wrong(tr, records[:2], (0, 0, 1, 1))
    tok = tr._tokenizer
    adv = out["advantages"]
    B, T = out["completion_ids"].shape
    assert adv.shape == (B, T)
    steps = tr._process_fn.last_steps
    inside = torch.zeros(B, T, dtype=torch.bool)
    for i in range(B):
        ids = list(tr._last_ids[i])
        assert out["completion_ids"][i, : len(ids)].cpu().tolist() == ids
        text_i = tr._last_texts[i]
        assert text_i == (teacher_text if i % 2 == 0 else wrong_text)(records[i // 2])
        assert steps[i], f"row {i}: no steps parsed"
        spans = step_token_spans(text_i, steps[i], completion_token_offsets(tok, text_i, ids))
        for (s, e), st in zip(spans, steps[i]):
            assert e > s
            assert tok.decode(ids[s:e], skip_special_tokens=True).strip() == st.text.strip(), (family, i, st.text)
            inside[i, s:e] = True
    # Outside the step spans every token keeps the row's sequence advantage A_i.
    adv, inside = adv.float().cpu(), inside.cpu()
    mask = out["completion_mask"].bool().cpu()
    for i in range(B):
        outside = adv[i][~inside[i] & mask[i]]
        assert torch.allclose(outside, outside[0].expand_as(outside))
    # Right-answer rows (0, 2) are untouched; wrong-answer rows (1, 3) are reshaped inside steps.
    for i in (0, 2):
        assert torch.allclose(adv[i], adv[i, 0].expand(T))
    assert any(not torch.allclose(adv[i][inside[i]], adv[i][~inside[i]][0].expand(int(inside[i].sum())))
               for i in (1, 3))


# ------------------------------------------------------------------------------ save / reload / resume


@pytest.mark.parametrize("family", families())
def test_save_reload_and_resume_give_identical_logits(family, build, records, tmp_path):
    """Full fine-tuning 2 SFT steps in one go vs stopped after step 1 and resumed: the saved
    final models give identical logits; a checkpoint reloads to the final model's weights."""
    from medrl.models import load_policy
    from medrl.train.callbacks import StopAfterStepCallback

    path = build(family)
    straight = _sft(path, records, tmp_path / "straight", lora=None)
    _sft(path, records, tmp_path / "resumed", lora=None, callbacks=[StopAfterStepCallback(1)])
    assert (tmp_path / "resumed" / "checkpoint-1").is_dir()
    assert not (tmp_path / "resumed" / "checkpoint-2").exists()
    resumed = _sft(path, records, tmp_path / "resumed", lora=None, resume=True)
    state = json.loads((tmp_path / "resumed" / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2

    m1, p1 = load_policy(straight)
    m2, p2 = load_policy(resumed)
    ck, _ = load_policy(tmp_path / "straight" / "checkpoint-2")
    l1, l2, l3 = (_logits(m, p1, records) for m in (m1, m2, ck))
    assert torch.equal(l1, l3), "checkpoint-2 and the final model differ"
    torch.testing.assert_close(l1, l2, rtol=0, atol=1e-6)
    base, _ = load_policy(path)
    assert not torch.allclose(_logits(base, p1, records), l1), "training did not change the logits"
    assert math.isfinite(float(l1.abs().max()))


def test_build_model_cli_family(tmp_path):
    from medrl.cli import main
    from medrl.models import load_policy

    out = tmp_path / "smol"
    assert main(["build-model", "tiny", "--family", "smolvlm", "--out", str(out)]) == 0
    model, processor = load_policy(out)
    assert type(model).__name__ == "SmolVLMForConditionalGeneration"
    assert type(processor).__name__ == "ImageOnlySmolVLMProcessor" and processor.image_seq_len == 4
    with pytest.raises(SystemExit):
        main(["build-model", "tiny", "--family", "bogus", "--out", str(tmp_path / "x")])
    assert main(["build-model", "tiny", "--family", "qwen3_vl", "--image-size", "56",
                 "--out", str(tmp_path / "bad")]) == 2  # Qwen3-VL needs multiples of 32


def test_image_only_processor_fallback_keeps_init_arguments(build):
    """When the stock processor cannot be built, the image-only variant is assembled from the
    saved parts and keeps the saved init arguments (here InternVL's image_seq_length)."""
    from medrl.models.loading import _image_only_processor

    proc = _image_only_processor(str(build("internvl")), RuntimeError("simulated"), False)
    assert type(proc).__name__ == "ImageOnlyInternVLProcessor" and proc.image_seq_length == 4


def test_tiny_family_shorthand_builds_into_the_cache(tmp_path, monkeypatch):
    from medrl.models.loading import resolve_model_path

    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    path = resolve_model_path("tiny-internvl")
    assert json.loads((tmp_path / "cache" / "models" / "tiny-internvl" / "config.json").read_text())[
        "model_type"] == "internvl"
    assert path == str(tmp_path / "cache" / "models" / "tiny-internvl")
    assert resolve_model_path("tiny-internvl") == path  # reused
    from medrl.common.exit_codes import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="tiny-bogus"):  # not a shorthand, no folder, not cached
        resolve_model_path("tiny-bogus")
