"""A damaged model folder is named before a run loads it: a cut or garbage tokenizer.json, a garbage
processor config, a broken chat template, a weights file whose header lies, NaN or infinite
weights. The preflight (`train --dry-run`), every start (`medrl.cli`) and `eval` fail with exit 5
and one line naming the file; `trust_remote_code` is off unless the user passes the flag."""

from __future__ import annotations

import ast
import json
import shutil
import struct
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from medrl.models import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model")


def _rewrite_header(f: Path, change) -> None:
    raw = f.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    change(header)
    hb = json.dumps(header).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    f.write_bytes(struct.pack("<Q", len(hb)) + hb + raw[8 + n:])


def _first_tensor(header: dict) -> str:
    return sorted(k for k in header if k != "__metadata__")[0]


def _set_weight(folder: Path, value: float) -> None:
    from safetensors.torch import load_file, save_file

    sd = load_file(folder / "model.safetensors")
    key = sorted(sd)[3]
    sd[key] = sd[key].clone()
    sd[key].view(-1)[0] = value
    save_file(sd, folder / "model.safetensors", metadata={"format": "pt"})


def _processor_patch_size(folder: Path) -> None:
    cfg = json.loads((folder / "processor_config.json").read_text())
    cfg["image_processor"]["patch_size"] = "big"
    (folder / "processor_config.json").write_text(json.dumps(cfg))


DAMAGE = {
    "cut tokenizer.json": (lambda d: (d / "tokenizer.json").write_bytes((d / "tokenizer.json").read_bytes()[:400]),
                           "tokenizer.json is not valid JSON"),
    "garbage tokenizer.json": (lambda d: (d / "tokenizer.json").write_bytes(b"\x00\xff garbage" * 40),
                               "tokenizer.json is not valid JSON"),
    "tokenizer.json of the wrong shape": (lambda d: (d / "tokenizer.json").write_text('{"model": 3}'),
                                          "the tokenizer (tokenizer.json"),
    "garbage processor config": (lambda d: (d / "processor_config.json").write_bytes(b"\x00garbage"),
                                 "processor_config.json is not valid JSON"),
    "processor config with nonsense values": (_processor_patch_size, "the processor (processor_config.json)"),
    "broken chat template": (lambda d: (d / "chat_template.jinja").write_text("{% for m in messages %}{{ m['content'] }"),
                             "chat_template.jinja: the chat template does not render"),
    "header lies about a shape": (lambda d: _rewrite_header(d / "model.safetensors", lambda h: h[_first_tensor(h)].update(
        shape=[2 * s for s in h[_first_tensor(h)]["shape"]])), "model.safetensors: the header lies about tensor"),
    "header lies about the end": (lambda d: (d / "model.safetensors").write_bytes(
        (d / "model.safetensors").read_bytes() + b"\0" * 64), "bytes longer than its header declares"),
    "NaN weights": (lambda d: _set_weight(d, float("nan")), "non-finite value(s) (NaN)"),
    "inf weights": (lambda d: _set_weight(d, float("inf")), "non-finite value(s) (infinity)"),
}


@pytest.fixture(scope="module")
def damaged(tiny_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    out = {}
    for i, (name, (damage, _)) in enumerate(DAMAGE.items()):
        d = root / f"m{i}"
        shutil.copytree(tiny_dir, d)
        damage(d)
        out[name] = d
    return out


def test_an_intact_folder_passes_every_check(tiny_dir):
    from medrl.models.integrity import model_problem

    assert model_problem(tiny_dir) is None


@pytest.mark.parametrize("case", list(DAMAGE))
def test_each_damage_is_named(case, damaged):
    from medrl.models.integrity import model_problem

    why = model_problem(damaged[case])
    assert why is not None and DAMAGE[case][1] in why and "\n" not in why


@pytest.mark.parametrize("case", ["cut tokenizer.json", "garbage processor config", "broken chat template",
                                  "header lies about a shape", "NaN weights", "inf weights"])
def test_the_dry_run_fails_with_the_model_code_naming_the_file(case, damaged, capsys):
    """The preflight used to print "preflight: OK" for each of these and crash in training."""
    from medrl.cli import main

    assert main(["train", "--recipe", "grpo", "--model", str(damaged[case]), "--dry-run"]) == 5
    err = capsys.readouterr().err
    assert DAMAGE[case][1] in err and "preflight: FAILED (exit 5)" in err and "Traceback" not in err


def test_eval_refuses_a_model_with_nan_weights(damaged, tmp_path, capsys):
    """Eval used to score an all-NaN model and write a report."""
    from medrl.cli import main

    out = tmp_path / "ev"
    code = main(["eval", "--model", str(damaged["NaN weights"]), "--data", "vqa_rad:test", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 5 and "non-finite" in err and "model.safetensors" in err and len(err.splitlines()) == 1
    assert not (out / "report.html").exists() and not (out / "metrics.json").exists()


def test_a_real_start_names_the_file_too(damaged, tmp_path, capsys):
    from medrl.cli import main

    code = main(["sft", "--model", str(damaged["broken chat template"]), "--out", str(tmp_path / "s")])
    assert code == 5 and "chat_template.jinja" in capsys.readouterr().err


def test_safetensors_header_checks(tiny_dir, tmp_path):
    from medrl.models.integrity import safetensors_problem

    f = tmp_path / "m.safetensors"
    shutil.copy(tiny_dir / "model.safetensors", f)
    assert safetensors_problem(f) is None
    raw = f.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(raw[:-10])
    assert "cut short" in safetensors_problem(tmp_path / "cut.safetensors")
    (tmp_path / "empty.safetensors").write_bytes(b"")
    assert "no header" in safetensors_problem(tmp_path / "empty.safetensors")

    def overlap(h):
        names = sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])
        h[names[1]]["data_offsets"] = [h[names[0]]["data_offsets"][0], h[names[0]]["data_offsets"][0]
                                       + h[names[1]]["data_offsets"][1] - h[names[1]]["data_offsets"][0]]
    _rewrite_header(f, overlap)
    assert "overlaps" in safetensors_problem(f) or "gap" in safetensors_problem(f)


# --------------------------------------------------------------------------------------------
# trust_remote_code


def test_no_call_in_medrl_turns_remote_code_on():
    """Every ``trust_remote_code=`` argument in the package is a variable (the user's flag), never ``True``."""
    found = []
    for path in (REPO / "medrl").rglob("*.py"):
        text = path.read_text()
        if "trust_remote_code" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.keyword) and node.arg == "trust_remote_code" and \
                    isinstance(node.value, ast.Constant) and node.value.value is True:
                found.append(f"{path.relative_to(REPO)}:{node.value.lineno}")
    assert not found


def test_medrl_folders_load_without_remote_code(tiny_dir):
    """The image-only processor a medrl folder names is registered by importing medrl.models."""
    from medrl.models.loading import load_processor

    proc = load_processor(tiny_dir, trust_remote_code=False)
    assert type(proc).__name__ == "ImageOnlyQwen2_5_VLProcessor"


def test_a_folder_that_needs_its_own_code_is_refused_without_the_flag(tiny_dir, tmp_path):
    from medrl.models.integrity import model_problem

    d = tmp_path / "remote"
    shutil.copytree(tiny_dir, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig"}
    cfg["model_type"] = "evil_vlm"
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "configuration_evil.py").write_text("raise SystemExit('remote code ran')\n")
    why = model_problem(d)
    assert why is not None and "--trust-remote-code" in why and "config.json" in why


@pytest.mark.parametrize("override", ["grpo.trust_remote_code=true", "model.trust_remote_code=true",
                                      "sft.trust_remote_code=true",
                                      "grpo.model_init_kwargs={trust_remote_code: true}"])
def test_no_recipe_setting_turns_remote_code_on(override):
    from medrl.train.recipes import RecipeError, load_recipe

    with pytest.raises(RecipeError, match="--trust-remote-code"):
        load_recipe("grpo", overrides=[override])


def test_the_flag_reaches_the_loaders_and_trl(tmp_path):
    from medrl.train.recipes import build_grpo_config, load_recipe, policy_load_options

    recipe = load_recipe("grpo")
    assert policy_load_options(recipe) == {"trust_remote_code": False, "quantization": None}
    assert build_grpo_config(recipe, tmp_path, use_cpu=True, report_to=[]).trust_remote_code is False
    recipe.model["trust_remote_code"] = True  # what --trust-remote-code does after loading the recipe
    assert policy_load_options(recipe)["trust_remote_code"] is True
    assert build_grpo_config(recipe, tmp_path, use_cpu=True, report_to=[]).trust_remote_code is True


def test_eval_vllm_backend_passes_the_flag(monkeypatch):
    import sys
    import types

    calls = []
    fake = types.ModuleType("vllm")
    fake.LLM = lambda **kw: calls.append(kw)
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    from medrl.eval.runner import build_generate_fn

    build_generate_fn("some/model", backend="vllm")
    build_generate_fn("some/model", backend="vllm", trust_remote_code=True)
    assert [c["trust_remote_code"] for c in calls] == [False, True]
