"""Nothing outside a method's file names the method: the trainer, credit log, pipeline, recipe
schema and loader (``medrl/train/``), the shared modules of ``medrl/methods/`` (``base``,
``context``, ``stages``) and the generic estimators (``medrl/advantages.py``) ask a method
through its hooks and attributes. Code is read, not prose: docstrings and comments may cite the
papers, and so may messages and help text (a string with spaces); identifiers and one-word strings
(keys, names: ``alg["mrpo"]``) may not name a method or its section."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "medrl"
FILES = sorted((ROOT / "train").rglob("*.py")) + [ROOT / "methods" / f"{m}.py" for m in ("base", "context", "stages")] + [
    ROOT / "advantages.py"]


def method_words() -> re.Pattern:
    from medrl.methods import METHODS, get_method

    words = set()
    for name in METHODS.names():
        cls = get_method(name)
        words |= {name, cls.section or name, name.split("_")[0]}  # medix_r1 -> medix (medix_llm, medix_embed)
    return re.compile(r"(?<![a-z])(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r")(?![a-z])",
                      re.I)


def code_words(source: str) -> list[tuple[int, str]]:
    """(line, text) of every identifier and one-word string literal (no spaces: a key or a name,
    not a message) of ``source``."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if not re.search(r"\s", node.value):
                out.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.lineno, node.name))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, ast.keyword) and node.arg:
            out.append((node.value.lineno, node.arg))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [(node.lineno, getattr(node, "module", None) or "")] + [(node.lineno, a.name) for a in node.names]
    return out


def test_the_pattern_finds_what_it_must():
    pat = method_words()
    code = '"""MRPO Eq. 7."""\nx = alg["mrpo"]["tau"]  # CAPO\ny = capo_cfg\nraise ValueError("MRPO needs it")\n'
    hits = sorted(w for _, w in code_words(code) if pat.search(w))
    assert hits == ["capo_cfg", "mrpo"]  # the docstring, the comment and the message are prose


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_method_is_named_outside_its_file(path):
    pat = method_words()
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}" for line, text in code_words(path.read_text())
             if pat.search(text)]
    assert not found, "ask the method (hooks, attributes) instead of naming it:\n" + "\n".join(found)
