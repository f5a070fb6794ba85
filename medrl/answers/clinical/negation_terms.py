"""The project's negation vocabulary, read from one data file (``negation.tsv`` next to this module).

Every module that needs negation words (the lexicon's content words, the answer structure's
negation shapes, NegEx's extra termsets, the variant generator) takes them from :func:`terms`,
so a word is added or removed in one place. Each row is ``term``, ``role``, ``match`` (see the
file's header for the roles).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

PATH = Path(__file__).with_name("negation.tsv")
ROLES = ("word", "cue", "trailing", "preceding", "foreign", "negex_preceding", "negex_following", "negex_pseudo",
         "negex_termination", "scope_cue", "null", "negative_reference", "step")


@lru_cache(maxsize=1)
def _rows() -> tuple[tuple[str, str, str], ...]:
    out = []
    for n, line in enumerate(PATH.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#") or line.startswith("term\t"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or parts[1] not in ROLES or parts[2] not in ("word", "phrase", "regex"):
            raise ValueError(f"{PATH}: line {n}: expected 'term<TAB>role<TAB>match' with a role of "
                             f"{', '.join(ROLES)}; got {line!r}")
        out.append((parts[0], parts[1], parts[2]))
    return tuple(out)


@lru_cache(maxsize=None)
def terms(role: str) -> tuple[str, ...]:
    """The terms of ``role``, in file order."""
    if role not in ROLES:
        raise ValueError(f"unknown negation role {role!r}; known: {', '.join(ROLES)}")
    return tuple(t for t, r, _ in _rows() if r == role)


def alternation(role: str) -> str:
    """The terms of ``role`` as one regular-expression alternation (``a|b|c``); word and phrase
    terms are escaped, regex terms kept as written."""
    kinds = {t: m for t, r, m in _rows() if r == role}
    return "|".join(t if kinds[t] == "regex" else re.escape(t) for t in terms(role))
