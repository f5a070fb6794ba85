"""Equivalent written forms of short medical phrases, built on the shared lexicon.

StepGRPO (Sec. 3.2.2) augments each key step "into multiple
equivalent formats" so that soft matching does not miss a step written differently; the paper
does not list the formats. :func:`equivalent_forms` is the project's rule-based version, shared
by key-step curation (:mod:`medrl.data.curation.key_steps`) and the StepRAR matcher
(:mod:`medrl.rewards.stepgrpo`). Abbreviations, synonyms and spellings come from the one
lexicon (:mod:`medrl.answers.clinical.lexicon`): "CT" <-> "computed tomography", "renal" <-> "kidney",
"CXR" <-> "chest radiograph".
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

from medrl.answers.clinical.lexicon import canonical_text, load_lexicon

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve"]
MAX_FORMS = 16  # per step: the lexicon can list many variants of one term
_VARIANT_KINDS = ("abbrev", "synonym", "spelling", "anatomy")


def _norm(s: str) -> str:
    s = re.sub(r"[^\w\s/+-]", " ", s.lower())
    return re.sub(r"\s+", " ", s).strip()


@lru_cache(maxsize=1)
def _variants() -> dict[str, tuple[str, ...]]:
    """canonical term -> its variants in the lexicon (abbreviations, synonyms, spellings)."""
    out: dict[str, list[str]] = defaultdict(list)
    for variant, canon, kind in load_lexicon():
        if kind in _VARIANT_KINDS and variant != canon:
            out[canon].append(variant)
    return {k: tuple(v) for k, v in out.items()}


def equivalent_forms(step: str) -> list[str]:
    """Equivalent written forms of a key step, the step itself first (a heuristic).

    Forms: lower-cased without punctuation; hyphens as spaces and removed ("x-ray", "x ray",
    "xray"); the lexicon's canonical wording (:func:`medrl.answers.clinical.lexicon.canonical_text`:
    "computed tomography of the chest" -> "ct of the chest") and, for each canonical term in
    it, the lexicon's variants ("ct" -> "computed tomography", "cat scan", ...); numbers as
    digits and words (0-12). Deduplicated, order kept, at most :data:`MAX_FORMS`.
    """
    base = step.strip()
    n = _norm(base)
    words = n.replace("-", " ").split()
    cands = [n, n.replace("-", " "), n.replace("-", "")]
    canon = _norm(canonical_text(base))
    cands.append(canon)
    cands.append(" ".join(NUMBER_WORDS[int(w)] if w.isdigit() and int(w) < len(NUMBER_WORDS) else w
                          for w in words))
    cands.append(" ".join(str(NUMBER_WORDS.index(w)) if w in NUMBER_WORDS else w for w in words))
    padded = f" {canon} "
    for term, variants in _variants().items():
        if f" {term} " in padded:
            cands.extend(padded.replace(f" {term} ", f" {v} ", 1).strip() for v in variants)
    forms, seen = [base], {base.lower()}
    for c in cands:
        if c and c not in seen and len(forms) < MAX_FORMS:
            seen.add(c)
            forms.append(c)
    return forms
