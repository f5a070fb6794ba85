"""Absurd settings and missing optional packages are refused by the preflight with one line naming
the key (and its accepted range) or the package (and how to install it), before any model loads:
``learning_rate=1e3`` used to crash at step 3, ``beta=-1`` and ``max_grad_norm=-1`` trained
silently, and ``grpo.use_vllm=true`` without vLLM passed the preflight and died in TRL."""

from __future__ import annotations

import pytest

from medrl.cli import main


@pytest.mark.parametrize("override, key, accepted", [
    ("grpo.learning_rate=1e3", "grpo.learning_rate", "0 < learning_rate <= 1"),
    ("grpo.learning_rate=1.5", "grpo.learning_rate", "0 < learning_rate <= 1"),
    ("grpo.beta=-1", "grpo.beta", "beta >= 0"),
    ("grpo.max_grad_norm=-1", "grpo.max_grad_norm", "max_grad_norm >= 0"),
    ("sft.learning_rate=1e3", "sft.learning_rate", "0 < learning_rate <= 1"),
    ("sft.max_grad_norm=-0.5", "sft.max_grad_norm", "max_grad_norm >= 0"),
])
def test_absurd_settings_are_refused_naming_key_and_range(override, key, accepted, capsys):
    assert main(["train", "--recipe", "grpo", "--set", override, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{key}: must be" in err and f"accepted: {accepted}" in err and f"--set {override}" in err
    assert "Traceback" not in err


def test_values_at_the_edges_are_accepted():
    """0 turns gradient clipping off (transformers' TrainingArguments) and the KL term off (beta)."""
    from medrl.train.recipes import load_recipe

    recipe = load_recipe("grpo", overrides=["grpo.max_grad_norm=0", "grpo.beta=0", "grpo.learning_rate=1"])
    assert recipe.grpo["max_grad_norm"] == 0 and recipe.grpo["beta"] == 0


def test_a_high_but_possible_learning_rate_is_warned_about():
    from medrl.train.recipe_schema import range_warnings

    assert range_warnings({"learning_rate": 5e-2}, {}) and "grpo.learning_rate" in range_warnings(
        {"learning_rate": 5e-2}, {})[0]
    assert range_warnings({"learning_rate": 1e-6}, {"learning_rate": 2e-5}) == []


def test_sft_shortcuts_are_checked_like_the_recipe(tmp_path, capsys):
    assert main(["sft", "--model", "tiny", "--lr", "1e3", "--out", str(tmp_path / "s"), "--dry-run"]) == 2
    assert "sft.learning_rate: must be > 0 and at most 1" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# optional packages


def _missing(name: str) -> bool:
    from medrl.train.backends import installed

    return not installed(name)


@pytest.mark.skipif(not _missing("vllm"), reason="vLLM is installed here")
def test_a_dry_run_with_vllm_and_no_vllm_fails_in_one_line_naming_vllm(capsys):
    assert main(["train", "--recipe", "grpo", "--set", "grpo.use_vllm=true", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == ("medrl train: grpo.use_vllm=true needs vLLM, which is not installed: pip install "
                      "'medrl[vllm]' (on a CUDA machine), or leave vLLM off")
    assert err[1:] == ["preflight: FAILED (exit 2)"]


@pytest.mark.skipif(not _missing("vllm"), reason="vLLM is installed here")
def test_eval_vllm_backend_without_vllm_is_one_line(tmp_path, capsys):
    code = main(["eval", "--model", "tiny", "--data", "vqa_rad:test", "--backend", "vllm", "--out",
                 str(tmp_path / "ev")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--backend vllm needs vLLM" in err and len(err.splitlines()) == 1


@pytest.mark.skipif(not _missing("mlflow"), reason="mlflow is installed here")
def test_a_tracker_that_is_not_installed_is_named(capsys):
    assert main(["train", "--recipe", "grpo", "--set", "grpo.report_to=[tensorboard, mlflow]", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "grpo.report_to: mlflow needs the mlflow package, which is not installed: pip install mlflow" in err
    assert err.count("needs the") == 1  # tensorboard is installed


def test_an_unknown_tracker_is_named(capsys):
    assert main(["train", "--recipe", "grpo", "--set", "grpo.report_to=[wandbb]", "--dry-run"]) == 2
    assert "unknown tracker 'wandbb'" in capsys.readouterr().err


@pytest.mark.skipif(not _missing("deepspeed"), reason="DeepSpeed is installed here")
def test_deepspeed_without_deepspeed_is_named(tmp_path, capsys):
    cfg = tmp_path / "zero3.json"
    cfg.write_text("{}")
    assert main(["train", "--recipe", "grpo", "--set", f"grpo.deepspeed={cfg}", "--dry-run"]) == 2
    assert "pip install 'medrl[deepspeed]'" in capsys.readouterr().err


def test_qlora_is_named_in_help_and_refused_in_one_line_where_bitsandbytes_cannot_run(capsys):
    import contextlib
    import io

    from medrl.models.loading import quantization_problem

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "QLoRA" in buf.getvalue() and "--qlora" in buf.getvalue()
    why = quantization_problem({"load_in_4bit": True})
    if why is None:
        pytest.skip("bitsandbytes runs on this machine: the refusal cannot be shown")
    capsys.readouterr()
    assert main(["train", "--recipe", "grpo", "--qlora", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == f"medrl train: {why}" and "bitsandbytes" in err[0] and len(err) == 2


def test_qlora_settings_reach_bitsandbytes_config():
    """`--qlora` is the recipe key model.load_in_4bit: NF4 with double quantization, bf16 compute."""
    from medrl.train.recipes import load_recipe, policy_load_options

    recipe = load_recipe("grpo", overrides=["model.load_in_4bit=true"])
    assert recipe.model == {"load_in_4bit": True}
    q = policy_load_options(recipe)["quantization"]
    assert q == {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16",
                 "bnb_4bit_use_double_quant": True}
    from transformers import BitsAndBytesConfig

    cfg = BitsAndBytesConfig(**q)
    assert cfg.load_in_4bit and cfg.bnb_4bit_quant_type == "nf4" and cfg.bnb_4bit_use_double_quant
    assert load_recipe("grpo").model == {}  # the default leaves config.yaml as it was


def test_load_policy_in_4bit_takes_the_bitsandbytes_path(monkeypatch, tmp_path):
    """Without a GPU backend the real load cannot run here: the loader is stubbed to check that
    transformers gets a BitsAndBytesConfig and peft's prepare_model_for_kbit_training runs before
    the adapters are added."""
    import peft
    import transformers

    from medrl.models import loading

    seen = {}

    class FakeModel:
        generation_config = None

    def fake_from_pretrained(path, **kw):
        seen["kwargs"] = kw
        return FakeModel()

    monkeypatch.setattr(loading, "quantization_problem", lambda q=None: None)
    monkeypatch.setattr(loading, "load_processor", lambda *a, **k: type("P", (), {"tokenizer": None})())
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", lambda *a, **k: None)
    monkeypatch.setattr(transformers.AutoModelForImageTextToText, "from_pretrained", fake_from_pretrained)
    monkeypatch.setattr(peft, "prepare_model_for_kbit_training", lambda m: seen.setdefault("prepared", m))
    monkeypatch.setattr(loading, "apply_lora", lambda m, lora, model_dir=None: ("lora", m))
    monkeypatch.setattr(loading, "resolve_model_path", lambda p: str(tmp_path))
    q = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16",
         "bnb_4bit_use_double_quant": True}
    model, _ = loading.load_policy("x", lora=True, quantization=q)
    assert isinstance(seen["kwargs"]["quantization_config"], transformers.BitsAndBytesConfig)
    assert seen["kwargs"]["trust_remote_code"] is False and "prepared" in seen and model[0] == "lora"


def test_train_help_names_remote_code_and_the_model_checks(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "--trust-remote-code" in out and "report_to" in out
