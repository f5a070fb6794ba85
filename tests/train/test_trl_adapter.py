"""TRL's private attributes stay in a small adapter (``medrl/train/trainer.py``, ``kl_clamp.py``,
``dynamic_sampling.py``, ``speed.py``), checked against a pinned range of TRL versions: the
installed TRL must lie in it, every private the adapter names must exist there, and no method
file nor the architecture page's examples touch one."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import trl
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from medrl.train.trainer import TRL_CHECKED, TRL_PRIVATES

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = [ROOT / "medrl" / "train" / f for f in ("trainer.py", "kl_clamp.py", "dynamic_sampling.py", "speed.py")]
#: how a TRL private is reached: an attribute of TRL's trainer object that starts with "_"
PRIVATE = re.compile(r"\b(?:trainer|tr)\._(?!_)\w+|" + "|".join(rf"\b{re.escape(n)}\b" for n in TRL_PRIVATES))


def test_the_installed_trl_is_the_one_the_adapter_was_checked_against():
    assert Version(trl.__version__) in SpecifierSet(TRL_CHECKED), (
        f"TRL {trl.__version__} is outside {TRL_CHECKED}, the versions medrl's TRL adapter was checked against: check "
        f"every name of medrl.train.trainer.TRL_PRIVATES in the new TRL, then widen TRL_CHECKED")


def test_every_private_the_adapter_uses_exists_in_trl():
    source = inspect.getsource(trl.GRPOTrainer.__init__)
    missing = [name for name in TRL_PRIVATES
               if not hasattr(trl.GRPOTrainer, name) and f"self.{name} =" not in source]
    assert not missing, f"TRL {trl.__version__} has no {missing}"
    adapter = "\n".join(p.read_text() for p in ADAPTER)
    assert all(name in adapter for name in TRL_PRIVATES)  # the list names what the adapter uses, no more


def test_no_method_file_nor_the_architecture_page_touches_a_trl_private():
    files = sorted((ROOT / "medrl" / "methods").glob("*.py")) + [ROOT / "docs" / "architecture.md"]
    found = [f"{p.relative_to(ROOT)}:{i}: {m.group(0)}" for p in files
             for i, line in enumerate(p.read_text().splitlines(), 1) for m in PRIVATE.finditer(line)]
    assert not found, "a method reaches into TRL's trainer; use the StepContext instead:\n" + "\n".join(found)


def test_the_pattern_finds_what_it_must():
    assert PRIVATE.search('trainer._metrics["train"]["x"].append(1)')
    assert PRIVATE.search("offsets(trainer._tokenizer, text)")
    assert not PRIVATE.search("ctx.log('x', 1); ctx.tokenizer; trainer.__class__")
