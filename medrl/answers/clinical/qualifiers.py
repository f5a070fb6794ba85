"""Allowed qualifiers of a short answer (data file ``qualifiers.tsv``).

An answer may add an allowed qualifier to the reference and stay correct ("Chest X-Ray, PA view"
for "chest x-ray", "Liver, enlarged" for "Liver", "MRI, T2-weighted" for "MRI"); a *filler*
("plane", "view", "weighted") may also be left out. Words are canonical lexicon words
(:func:`medrl.answers.clinical.lexicon.content_tokens`), so "PA view" is "posteroanterior" and
"T2-weighted" is "t2". Contradictions between two qualifiers ("T1" vs "T2") are
:mod:`medrl.answers.clinical.mismatch`'s business, not this table's.
"""

from __future__ import annotations

from functools import lru_cache

QUALIFIERS_FILE = "qualifiers.tsv"
KINDS = ("filler", "view", "plane", "sequence", "contrast", "severity", "size", "acuity", "extent",
         "descriptor", "affirmation", "modality")


@lru_cache(maxsize=1)
def load_qualifiers() -> dict[str, str]:
    """canonical word -> kind; a bad line raises naming the file and line."""
    from medrl.answers.clinical.lexicon import content_tokens, data_rows

    out: dict[str, str] = {}
    for n, parts, line in data_rows(QUALIFIERS_FILE, ["word", "kind"]):
        if len(parts) != 2 or parts[1].strip() not in KINDS:
            raise ValueError(f"{QUALIFIERS_FILE}:{n}: expected 'word<TAB>kind' with a kind of {KINDS}, got {line!r}")
        for tok in content_tokens(parts[0]) or [parts[0].strip().lower()]:
            out.setdefault(tok, parts[1].strip())
    return out


def qualifier_kind(token: str) -> str | None:
    """The kind of a canonical word when it is an allowed qualifier, else None."""
    return load_qualifiers().get(token)


def is_filler(token: str) -> bool:
    return qualifier_kind(token) == "filler"


def is_qualifier_phrase(text: str | None) -> bool:
    """Every content word of ``text`` is an allowed qualifier other than a modality ("PA view",
    "enlarged", "T2-weighted", "with contrast"); False for a text without content words."""
    from medrl.answers.clinical.lexicon import content_tokens

    toks = content_tokens(text)
    return bool(toks) and all(qualifier_kind(t) not in (None, "modality") for t in toks)
