"""Strict parsers for judge replies (the text an LLM judge sends back; the completions of the
policy are parsed by :mod:`medrl.answers.completion`). Anything that does not parse raises
:class:`VerdictParseError`, which the judges turn into an *unscored* verdict - a reply is never
read as a pass by default, and no reply makes a parser fail any other way: a number too long for
Python to read (more than 4,300 digits) or JSON nested too deeply is unparseable too.

What is tolerated, and nothing more: surrounding whitespace; a leading ``<think>...</think>``
block (reasoning judges such as Qwen3 emit one); for one-word verdicts, surrounding quotes or
markdown emphasis and one trailing full stop; for JSON, one Markdown code fence around the
object. "Yes, but no", "The answer is YES", JSON followed by prose, a key given twice in one
object (``{"score": 0, "score": 1}``, also ``"Score"`` next to ``"score"``), NaN, two
field names for one field with different values, and step verdicts given both as a ``steps``
list and as a ``Reasoning_Check`` that disagree are rejected: an ambiguous verdict is unscored.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from medrl.types import StepVerdict


class VerdictParseError(ValueError):
    """The judge's reply does not have the required shape."""


_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_WRAP = "\"'`*_ \t\n"


def strip_thinking(text: str) -> str:
    if not isinstance(text, str):
        raise VerdictParseError(f"reply is not text: {type(text).__name__}")
    return _THINK.sub("", text, count=1).strip()


def _word(text: str) -> str:
    core = strip_thinking(text).strip(_WRAP)
    if core.endswith("."):
        core = core[:-1].strip(_WRAP)
    return core


def _binary(text: str, true: str, false: str) -> bool:
    """The reply is the word ``true`` -> True or ``false`` -> False (any case); anything else raises."""
    word = _word(text)
    word = word.upper() if word.isascii() else word  # "yeſ" is not YES: only ASCII letters change case
    if word in (true, false):
        return word == true
    raise VerdictParseError(f"expected {true} or {false}, got {_short(text)}")


def parse_yes_no(text: str) -> bool:
    """``YES`` -> True, ``NO`` -> False (any case); anything else raises."""
    return _binary(text, "YES", "NO")


def parse_o_x(text: str) -> bool:
    """``O`` -> True, ``X`` -> False (MRPO App. H.1 format); anything else raises."""
    return _binary(text, "O", "X")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object whose keys are distinct, also ignoring case and surrounding space:
    ``{"score": 0, "score": 1}`` has no single reading (``json.loads`` would keep the last)."""
    seen: dict[str, str] = {}
    for k, _ in pairs:
        norm = k.strip().lower()
        if norm in seen:
            what = "twice" if seen[norm] == k else f"twice ({seen[norm]!r} and {k!r})"
            raise VerdictParseError(f"ambiguous verdict: the key {k!r} appears {what} in one object")
        seen[norm] = k
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise VerdictParseError(f"ambiguous verdict: {name} is not a number")


def parse_json_object(text: str) -> dict:
    """One JSON object, optionally inside one Markdown code fence. A key repeated in one object
    (also in another case) or NaN/Infinity makes the reply ambiguous: it raises, the item is
    unscored."""
    core = strip_thinking(text)
    m = _FENCE.match(core)
    if m:
        core = m.group(1).strip()
    try:
        obj = json.loads(core, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except VerdictParseError:
        raise
    except (json.JSONDecodeError, TypeError) as exc:
        raise VerdictParseError(f"reply is not a JSON object ({exc.msg if hasattr(exc, 'msg') else exc}): {_short(text)}") from None
    except RecursionError:
        raise VerdictParseError(f"reply is JSON nested too deeply to read ({len(core):,} characters)") from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise VerdictParseError(f"reply holds a value Python cannot read ({' '.join(str(exc).split())[:120]})") from None
    if not isinstance(obj, dict):
        raise VerdictParseError(f"reply is JSON but not an object: {_short(text)}")
    return obj


def _bit(value: Any, what: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, float) and value in (0.0, 1.0):
        return int(value)
    raise VerdictParseError(f"{what} must be 0 or 1, got {_short(value)}")


def _get(d: dict, *names: str) -> Any:
    """The value under the first of ``names`` present; two of them present (``gold_alignment``
    and ``Gold Alignment``) with different values is ambiguous and raises."""
    found = [(n, d[n]) for n in names if n in d]
    if len(found) > 1 and any(v != found[0][1] for _, v in found[1:]):
        raise VerdictParseError(f"ambiguous verdict: {', '.join(f'{n}={_short(v)}' for n, v in found)}")
    if found:
        return found[0][1]
    raise VerdictParseError(f"missing field {names[0]!r} in {_short(d)}")


def parse_step_verdicts(text: str, n_steps: int) -> list[StepVerdict]:
    """Per-step verdicts, exactly ``n_steps`` of them, in order.

    Accepted shapes: ours, ``{"steps": [{"step": 1, "gold_alignment": 0|1,
    "answer_contribution": 0|1, "reason": "..."?}, ...]}`` and the MRPO paper's
    ``{"Reasoning_Check": {"step1": {"Gold Alignment": 1, "Answer Contribution": 0}, ...}}``.
    """
    obj = parse_json_object(text)
    shapes = []
    if "steps" in obj:
        items = obj["steps"]
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise VerdictParseError("'steps' must be a list of objects")
        numbers = [i.get("step") for i in items]
        if any(x is not None for x in numbers) and numbers != list(range(1, len(items) + 1)):
            raise VerdictParseError(f"steps must be numbered 1..{len(items)} in order, got {_short(numbers)}")
        shapes.append(("steps", items))
    if "Reasoning_Check" in obj and (isinstance(obj["Reasoning_Check"], dict) or shapes):
        rc = obj["Reasoning_Check"]
        if not isinstance(rc, dict):
            raise VerdictParseError(f"ambiguous verdict: a 'steps' list and a Reasoning_Check that is not step "
                                    f"objects ({_short(rc)})")
        expected = [f"step{k}" for k in range(1, len(rc) + 1)]
        if list(rc) != expected or not all(isinstance(v, dict) for v in rc.values()):
            raise VerdictParseError(f"Reasoning_Check keys must be step1..stepN objects, got {_short(list(rc))}")
        shapes.append(("Reasoning_Check", list(rc.values())))
    if not shapes:
        raise VerdictParseError(f"expected a 'steps' list: {_short(text)}")
    readings = [_step_list(items, n_steps, where) for where, items in shapes]
    if len(readings) == 2:  # both shapes in one reply: they must say the same, step by step
        a, b = readings
        for k, (x, y) in enumerate(zip(a, b), 1):
            if (x.gold_alignment, x.answer_contribution) != (y.gold_alignment, y.answer_contribution):
                raise VerdictParseError(
                    f"ambiguous verdict: 'steps' and 'Reasoning_Check' disagree at step {k} (gold alignment "
                    f"{x.gold_alignment} vs {y.gold_alignment}, answer contribution {x.answer_contribution} vs "
                    f"{y.answer_contribution})")
    return readings[0]


def _step_list(items: list, n_steps: int, where: str) -> list[StepVerdict]:
    if len(items) != n_steps:
        raise VerdictParseError(f"expected {n_steps} step verdicts, got {len(items)} (in {where!r})")
    out = []
    for k, it in enumerate(items, 1):
        ga = _bit(_get(it, "gold_alignment", "Gold Alignment"), f"step {k} gold_alignment")
        ac = _bit(_get(it, "answer_contribution", "Answer Contribution"), f"step {k} answer_contribution")
        reason = it.get("reason", "")
        out.append(StepVerdict(ga, ac, reason if isinstance(reason, str) else _short(reason, 500)))
    return out


#: Fields a judge may add next to a binary score that state the verdict a second time.
VERDICT_FIELDS = ("verdict", "correct", "is_correct", "correctness", "judgement", "judgment", "decision",
                  "result", "match")
_VERDICT_WORDS = {"yes": True, "no": False, "true": True, "false": False, "correct": True, "incorrect": False,
                  "o": True, "x": False, "right": True, "wrong": False, "pass": True, "fail": False}


def _stated_verdict(value: Any) -> bool | None:
    """The pass/fail a verdict field states (``"NO"``, ``false``, ``0``, ``"correct"``), None
    when it states none of them (free text such as ``"partially"`` is not read)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _VERDICT_WORDS.get(value.strip().strip(_WRAP).rstrip(".").strip().lower())
    return None


def parse_score(text: str, rubric: str = "binary") -> float:
    """``{"score": s}``: s in {0, 1} for "binary", an integer 0..5 for "report".

    A binary reply that states its verdict twice must agree with itself: ``{"score": 1,
    "verdict": "NO"}`` (any field of :data:`VERDICT_FIELDS` saying yes/no, true/false,
    correct/incorrect, O/X, 1/0 against the score) raises, so the item is unscored with that
    reason instead of being read as a pass.
    """
    obj = parse_json_object(text)
    s = _get(obj, "score")
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
        raise VerdictParseError(f"score must be a number, got {_short(s)}")
    allowed = (0, 1) if rubric == "binary" else tuple(range(6))
    if s not in allowed:
        raise VerdictParseError(f"{rubric} score must be one of {allowed}, got {_short(s)}")
    if rubric == "binary":
        for name, value in obj.items():
            if name.strip().lower() in VERDICT_FIELDS:
                stated = _stated_verdict(value)
                if stated is not None and stated != bool(s):
                    raise VerdictParseError(f"contradictory fields: score {_short(s)} but {name} {_short(value)}")
    return float(s)


AUDIT_STATUSES = ("consistent", "needs_fix", "drop")


def parse_audit(text: str, question: str = "", answer: str = "") -> dict:
    """ARMed audit JSON: status, new_q, new_a, notes. A needs_fix without a new question raises;
    for other statuses missing new_q / new_a default to the originals."""
    obj = parse_json_object(text)
    status = obj.get("status")
    if status not in AUDIT_STATUSES:
        raise VerdictParseError(f"status must be one of {AUDIT_STATUSES}, got {_short(status)}")
    new_q, new_a, notes = obj.get("new_q", question), obj.get("new_a", answer), obj.get("notes", "")
    for name, v in (("new_q", new_q), ("new_a", new_a), ("notes", notes)):
        if not isinstance(v, str):
            raise VerdictParseError(f"{name} must be a string, got {_short(v)}")
    if status == "needs_fix" and not new_q.strip():
        raise VerdictParseError("status needs_fix without a new_q")
    return {"status": status, "new_q": new_q.strip(), "new_a": (new_a.strip() or answer), "notes": notes}


def parse_key_steps(text: str) -> list[str]:
    """``{"key_steps": ["phrase", ...]}`` with 1 or more non-empty strings."""
    obj = parse_json_object(text)
    ks = _get(obj, "key_steps")
    if not isinstance(ks, list) or not ks or not all(isinstance(s, str) and s.strip() for s in ks):
        raise VerdictParseError(f"key_steps must be a non-empty list of non-empty strings, got {_short(ks)}")
    return [s.strip() for s in ks]


def _short(text: Any, n: int = 120) -> str:
    try:
        s = repr(text)
    except (ValueError, RecursionError):  # a huge int or a deeply nested value: named by its type
        s = f"<{type(text).__name__}>"
    return s if len(s) <= n else s[: n - 3] + "..."
