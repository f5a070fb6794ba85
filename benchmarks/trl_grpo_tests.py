"""TRL's own GRPO trainer tests, run offline against TRL's ``GRPOTrainer`` and against
``MedGRPOTrainer`` put in its place: a test that passes with the first must pass with the second.

TRL's tests are not part of medrl. Point ``--tests`` at the ``tests/`` folder of a TRL checkout
(``git clone https://github.com/huggingface/trl``; the folder holds ``test_grpo_trainer.py`` and
``testing_utils.py``). The script copies those two files into ``--out``, builds offline stand-ins
for the hub repositories they name (``trl-internal-testing/...``) in the same folder - tiny random
models from their transformers configs with a byte-level BPE tokenizer and TRL's own chat template
of the family (``trl/chat_templates``), tiny vision-language models from
:func:`medrl.models.build_tiny_vlm`, and the ``zen`` prompt sets written from the Zen of Python -
and runs pytest there (a repository id is a folder relative to the working directory, so nothing
is downloaded). Repositories with no stand-in here (trust-remote-code models and families medrl
cannot build offline) are listed in the summary: their tests fail the same way under both trainers.

For the ``medrl`` run a ``conftest.py`` replaces ``trl.GRPOTrainer`` by
:class:`medrl.train.trainer.MedGRPOTrainer` before the test module imports it (in both runs it
also defines the ``trl.import_utils.is_*_available`` checks a newer checkout's
``testing_utils.py`` imports and the installed TRL lacks, and makes the configs' unset ``bf16``
False on a machine without bf16 hardware, where transformers refuses TRL's default True). The summary
(``<out>/summary.json`` and stdout) gives each run's counts and every test whose outcome differs.

Usage::

    python benchmarks/trl_grpo_tests.py --tests ~/src/trl/tests --out /tmp/trl_grpo [-k EXPR]

Without ``--tests`` (``make bench``) it says so and exits 0; ``--smoke`` only builds and loads
the zen sets and the Qwen2 stand-ins. Slow: every test trains a tiny model for a few steps
(about an hour per run on 2 shared CPU cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ORG = "trl-internal-testing"

# Both runs: a TRL checkout's testing_utils may import availability checks that the installed TRL
# does not define (the checkout and the release differ); each missing one reports whether its
# package is installed.
COMPAT = '''"""Written by benchmarks/trl_grpo_tests.py."""
import importlib.util

import trl.import_utils as _iu

for _pkg in ("joblib", "harbor", "jmespath", "math_verify", "mergekit", "openreward", "vllm"):
    _name = f"is_{_pkg}_available"
    if not hasattr(_iu, _name):
        setattr(_iu, _name, (lambda p: lambda *a, **k: importlib.util.find_spec(p) is not None)(_pkg))

# TRL's configs default bf16 to True, which transformers refuses on a machine without bf16 hardware
# (TRL's CI runs on GPUs): there the unset default becomes False; a test's explicit value is kept.
from transformers.utils import is_torch_bf16_gpu_available
from trl.trainer.base_config import _BaseConfig

_post_init = _BaseConfig.__post_init__


def _cpu_post_init(self):
    if self.bf16 is None and not is_torch_bf16_gpu_available():
        self.bf16 = False
    _post_init(self)


_BaseConfig.__post_init__ = _cpu_post_init
'''
# The medrl run: MedGRPOTrainer in TRL's place, before the test module imports it.
SUBSTITUTE = '''
import trl
from medrl.train.trainer import MedGRPOTrainer

trl.GRPOTrainer = MedGRPOTrainer
'''

# (repo name, transformers config class, model class, TRL chat template, family tokens)
QWEN = dict(specials=("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                      "<tool_response>", "</tool_response>", "<think>", "</think>"),
            eos="<|im_end|>", pad="<|endoftext|>", bos=None)
LLAMA = dict(specials=("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                       "<|eot_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>"),
             eos="<|eot_id|>", pad="<|finetune_right_pad_id|>", bos="<|begin_of_text|>")
GEMMA = dict(specials=("<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"),
             eos="<end_of_turn>", pad="<pad>", bos="<bos>")
TEXT_MODELS = [
    ("tiny-Qwen2ForCausalLM-2.5", "Qwen2Config", "Qwen2ForCausalLM", "qwen2_5", QWEN),
    ("tiny-Qwen2ForSequenceClassification-2.5", "Qwen2Config", "Qwen2ForSequenceClassification", "qwen2_5", QWEN),
    ("tiny-Qwen3ForCausalLM", "Qwen3Config", "Qwen3ForCausalLM", "qwen3", QWEN),
    ("tiny-Qwen3ForSequenceClassification", "Qwen3Config", "Qwen3ForSequenceClassification", "qwen3", QWEN),
    ("tiny-Qwen3MoeForCausalLM", "Qwen3MoeConfig", "Qwen3MoeForCausalLM", "qwen3", QWEN),
    ("tiny-LlamaForCausalLM-3.2", "LlamaConfig", "LlamaForCausalLM", "llama3_2", LLAMA),
    ("tiny-LlamaForSequenceClassification-3.2", "LlamaConfig", "LlamaForSequenceClassification", "llama3_2", LLAMA),
    ("tiny-Gemma2ForCausalLM", "Gemma2Config", "Gemma2ForCausalLM", "gemma", GEMMA),
]
# repo name -> medrl.models family (the tiny VLM builder). Not the Qwen2-VL / Qwen2.5-VL families:
# without torchvision their stock processors cannot be built and medrl's stand-in processor is
# custom code, which TRL's tests load without trust_remote_code.
VLM_MODELS = {
    "tiny-LlavaNextForConditionalGeneration": "llava_next",
    "tiny-SmolVLMForConditionalGeneration": "smolvlm",
    "tiny-Gemma3ForConditionalGeneration": "gemma3",
}


def zen_lines() -> list[str]:
    """The 19 aphorisms of the Zen of Python (the standard library's ``this`` module, decoded)."""
    import codecs
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        import this
    text = codecs.decode(this.s, "rot13")
    return [ln.strip() for ln in text.splitlines()[2:] if ln.strip()]


def build_text_model(out: Path, config_cls: str, model_cls: str, template: str, tokens: dict) -> None:
    import torch
    import transformers
    from types import SimpleNamespace

    import trl
    from medrl.models.tiny import DEFAULT_TEXTS, _train_tokenizer

    chat = (Path(trl.__file__).parent / "chat_templates" / f"{template}.jinja").read_text()
    fam = SimpleNamespace(chat_template=chat, token_attrs={}, **tokens)
    tok = _train_tokenizer(zen_lines() + DEFAULT_TEXTS, 800, fam)
    cfg = dict(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=4, max_position_embeddings=1024,
               pad_token_id=tok.pad_token_id, eos_token_id=tok.convert_tokens_to_ids(tokens["eos"]),
               bos_token_id=tok.bos_token_id, tie_word_embeddings=True)
    if "Moe" in config_cls:
        cfg.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)
    if "SequenceClassification" in model_cls:
        cfg["num_labels"] = 1
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**cfg))
    if model.can_generate():
        model.generation_config.pad_token_id = tok.pad_token_id
        model.generation_config.eos_token_id = cfg["eos_token_id"]
    model.save_pretrained(out)
    tok.save_pretrained(out)


def write_zen(root: Path) -> None:
    """``zen`` (standard / conversational prompt-only, train 17 + test 2), ``zen-image`` and
    ``zen-multi-image`` (conversational prompt-only with one / two images), as local dataset
    folders with their configs in a README (what ``load_dataset(<folder>, <config>)`` reads)."""
    from datasets import Dataset, Features, Image, Sequence, Value
    from PIL import Image as PILImage

    lines = zen_lines()
    prompts = [" ".join(ln.split()[: max(2, len(ln.split()) // 2)]) for ln in lines]
    splits = {"train": prompts[:17], "test": prompts[17:]}

    def image(i: int):
        return PILImage.new("RGB", (32 + 8 * (i % 3), 32), ((40 * i) % 255, 90, 160))

    def dump(name: str, config: str, rows_of, features=None) -> str:
        paths = []
        for split, ps in splits.items():
            path = root / name / config / f"{split}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            rows = [rows_of(i, p) for i, p in enumerate(ps)]
            Dataset.from_list(rows, features=features).to_parquet(str(path))
            paths.append(f"  - split: {split}\n    path: {config}/{split}.parquet")
        return f"- config_name: {config}\n  data_files:\n" + "\n".join(paths)

    user = lambda content: [{"role": "user", "content": content}]  # noqa: E731
    zen = [dump("zen", "standard_prompt_only", lambda i, p: {"prompt": p}),
           dump("zen", "conversational_prompt_only", lambda i, p: {"prompt": user(f"{p} ...?")})]
    part = {"type": Value("string"), "text": Value("string")}
    msgs = [{"role": Value("string"), "content": [part]}]
    one = [dump("zen-image", "conversational_prompt_only",
                lambda i, p: {"prompt": user([{"type": "image", "text": None}, {"type": "text", "text": p}]),
                              "image": image(i)},
                Features({"prompt": msgs, "image": Image()}))]
    two = [dump("zen-multi-image", "conversational_prompt_only",
                lambda i, p: {"prompt": user([{"type": "image", "text": None}, {"type": "image", "text": None},
                                              {"type": "text", "text": p}]),
                              "images": [image(i), image(i + 1)]},
                Features({"prompt": msgs, "images": Sequence(Image())}))]
    for name, configs in (("zen", zen), ("zen-image", one), ("zen-multi-image", two)):
        (root / name / "README.md").write_text("---\nconfigs:\n" + "\n".join(configs) + "\n---\n")


def build_stand_ins(root: Path) -> list[str]:
    """Every stand-in under ``root`` (built once; kept between runs); returns the repo names."""
    from medrl.models import build_tiny_vlm

    root.mkdir(parents=True, exist_ok=True)
    if not (root / "zen" / "README.md").is_file():
        write_zen(root)
    for name, config_cls, model_cls, template, tokens in TEXT_MODELS:
        if not (root / name / "config.json").is_file():
            build_text_model(root / name, config_cls, model_cls, template, tokens)
    for name, family in VLM_MODELS.items():
        if not (root / name / "config.json").is_file():
            build_tiny_vlm(root / name, family=family, hidden_size=32, num_layers=2)
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def smoke(work: Path) -> int:
    """Build the zen sets and the Qwen2 stand-ins, then load them by repo id from ``work`` as the
    tests do (seconds)."""
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

    root = work / ORG
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "zen" / "README.md").is_file():
        write_zen(root)
    for name, config_cls, model_cls, template, tokens in TEXT_MODELS[:2]:
        if not (root / name / "config.json").is_file():
            build_text_model(root / name, config_cls, model_cls, template, tokens)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        ds = load_dataset(f"{ORG}/zen", "conversational_prompt_only", split="train")
        policy = AutoModelForCausalLM.from_pretrained(f"{ORG}/tiny-Qwen2ForCausalLM-2.5")
        rm = AutoModelForSequenceClassification.from_pretrained(f"{ORG}/tiny-Qwen2ForSequenceClassification-2.5")
        tok = AutoTokenizer.from_pretrained(f"{ORG}/tiny-Qwen2ForCausalLM-2.5")
        text = tok.apply_chat_template(ds[0]["prompt"], tokenize=False, add_generation_prompt=True)
    finally:
        os.chdir(cwd)
    print(f"trl_grpo_tests smoke: zen {len(ds)} train rows; policy {policy.num_parameters()} and reward model "
          f"{rm.num_parameters()} parameters; chat template ok ({'<|im_start|>assistant' in text})")
    return 0


def named_repos(test_file: Path) -> set[str]:
    import re

    return set(re.findall(rf'"{ORG}/([\w.-]+)"', test_file.read_text()))


def run_suite(work: Path, trainer: str, pytest_args: list[str]) -> dict[str, str]:
    """pytest on the copied tests with ``trainer`` ("trl" or "medrl"); {test id: outcome}."""
    tests = work / "tests"
    (tests / "conftest.py").write_text(COMPAT + (SUBSTITUTE if trainer == "medrl" else ""))
    xml = work / f"junit_{trainer}.xml"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "WANDB_DISABLED": "true"}
    if trainer == "medrl":
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
           "--rootdir", str(work), "--timeout", "1800", str(tests / "test_grpo_trainer.py"), *pytest_args]
    with open(work / f"pytest_{trainer}.log", "w") as log:
        subprocess.run(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    outcomes: dict[str, str] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        tid = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        kinds = {c.tag for c in case}
        outcomes[tid] = ("failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds
                         else "passed")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tests", default=os.environ.get("TRL_TESTS"),
                   help="the tests/ folder of a TRL checkout (or $TRL_TESTS)")
    p.add_argument("--out", default="trl_grpo_tests", help="working folder (stand-ins, logs, summary)")
    p.add_argument("--trainer", choices=("trl", "medrl", "both"), default="both")
    p.add_argument("-k", default=None, help="pytest -k expression (a subset of the tests)")
    p.add_argument("--smoke", action="store_true",
                   help="only build the zen sets and the tiny Qwen2 stand-ins in --out and load them by repo id")
    args = p.parse_args(argv)
    if args.smoke:
        return smoke(Path(args.out).resolve())
    if not args.tests:
        print("trl_grpo_tests: no TRL checkout given (--tests DIR or $TRL_TESTS); nothing run")
        return 0
    src = Path(args.tests).expanduser()
    work = Path(args.out).resolve()
    (work / "tests").mkdir(parents=True, exist_ok=True)
    for name in ("test_grpo_trainer.py", "testing_utils.py"):
        shutil.copyfile(src / name, work / "tests" / name)
    (work / "tests" / "__init__.py").write_text("")
    built = build_stand_ins(work / ORG)
    missing = sorted(named_repos(work / "tests" / "test_grpo_trainer.py") - set(built))
    extra = ["-k", args.k] if args.k else []
    runs = {t: run_suite(work, t, extra) for t in (("trl", "medrl") if args.trainer == "both" else (args.trainer,))}
    counts = {t: {k: sum(v == k for v in o.values()) for k in ("passed", "failed", "skipped")} for t, o in runs.items()}
    summary = {"tests": str(src), "stand_ins": built, "no_stand_in": missing, "counts": counts}
    if len(runs) == 2:
        trl_o, med_o = runs["trl"], runs["medrl"]
        summary["differ"] = {t: {"trl": trl_o.get(t), "medrl": med_o.get(t)}
                             for t in sorted(set(trl_o) | set(med_o)) if trl_o.get(t) != med_o.get(t)}
        summary["fail_with_both"] = sorted(t for t in trl_o if trl_o[t] == "failed" and med_o.get(t) == "failed")
    (work / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: summary[k] for k in summary if k not in ("fail_with_both",)}, indent=2))
    regressions = [t for t, d in summary.get("differ", {}).items() if d["trl"] == "passed"]
    return 1 if regressions else 0


if __name__ == "__main__":
    raise SystemExit(main())
