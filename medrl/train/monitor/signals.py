"""The monitor's pure signals: per-rollout features and per-step helpers (no state, no trainer).

Each function reads what a training batch already holds (a completion's text, its record, its
rewards) and calls no model or judge. :func:`independent_verdict` is the offline verdict the
``disagreement`` signal and the sequential paid-wrong test (:mod:`.sequential`) compare the run's
own correctness decision with.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, Sequence

log = logging.getLogger(__name__)

#: guard reason (medrl.answers.guard.guard_answer) -> the category the monitor logs
GUARD_CATEGORIES = ("list", "hedge", "negation", "padding", "injection", "placeholder", "yes_no_open",
                    "hidden", "stray_tag", "one_char", "no_alnum", "empty", "other")
_REASON_PATTERNS = (("candidate list", "list"), ("hedge", "hedge"), ("negat", "negation"), ("padded", "padding"),
                    ("injection", "injection"), ("placeholder", "placeholder"), ("open question", "yes_no_open"),
                    ("hidden", "hidden"), ("stray", "stray_tag"), ("one character", "one_char"),
                    ("no letters", "no_alnum"), ("empty", "empty"))
_WORDS = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the is are was were be of in on at to and or this that there it with for as by "
                  "image shows show shown answer question".split())

def guard_category(reason: str | None) -> str | None:
    """The monitor's category of an answer-guard reason ("candidate list" -> "list"), None if none.

    The reason text is classified once, by :func:`medrl.answers.reason_of` (a
    :class:`medrl.answers.Reason` member and its ``category``); a category the monitor does not
    track, or a text no reason covers, is "other"."""
    if not reason:
        return None
    try:
        from medrl.answers import reason_of

        cat = reason_of(reason).category
    except ImportError:  # pragma: no cover - the answers layer is part of medrl
        r = reason.casefold()
        cat = next((c for pat, c in _REASON_PATTERNS if pat in r), "other")
    except ValueError:
        cat = "other"
    return cat if cat in GUARD_CATEGORIES else "other"


@functools.lru_cache(maxsize=8192)
def _guard(answer: str, reference: str | None, question: str | None) -> str | None:
    """The answer guard's refusal of ``answer``, unless the one answer decision reads the answer
    as correct (a contrast such as "X, not W" is a list to the shape rules alone)."""
    from medrl.answers import Verdict, decide
    from medrl.answers.guard import guard_answer

    try:
        why = guard_answer(answer, reference, question=question)
        if why and reference and str(reference).strip() and \
                decide(answer, reference, question=question).verdict is Verdict.CORRECT:
            return None
        return why
    except Exception as exc:  # noqa: BLE001 - a diagnostic never stops a run
        log.debug("monitor: guard failed on %r (%s)", answer[:80], exc)
        return None


def independent_verdict(answer: str | None, reference: str | None, question: str | None = None) -> bool | None:
    """An offline verdict that does not use the run's judge: False when there is no answer; the
    one answer decision (:func:`medrl.answers.decide`: the guard's shapes, hard mismatches -
    another side, organ, modality, number or polarity -, identity, yes/no polarity, lexicon and
    structure) where it decides; where it leaves the answer open, False when the answer shares no
    concept with the reference (:func:`shares_concept`), otherwise None (undecided). A form the
    decision leaves undecided as suspect (an unknown symbol) stays undecided here too.

    The shared correctness decision is the same decision plus the run's judge on what it leaves
    undecided, so on a recipe with a ``correct`` column the two can differ only where that judge
    spoke; the concept check is what lets this verdict still decide some of those rollouts, so a
    judge that says "correct" to an unrelated answer shows up as disagreement. A reward that is
    not the shared decision (a surface metric, a judge plugged in directly) differs wherever it
    departs from the decision."""
    return _independent_verdict(answer, reference, question)


@functools.lru_cache(maxsize=16384)
def _independent_verdict(answer: str | None, reference: str | None, question: str | None) -> bool | None:
    if answer is None or reference is None:
        return None if reference is None else False
    if not str(reference).strip():
        return None
    try:
        from medrl.answers import Verdict, decide

        d = decide(answer, reference, question=question)
    except Exception as exc:  # noqa: BLE001 - a diagnostic never stops a run
        log.debug("monitor: the answer decision failed on %r (%s)", answer[:80], exc)
        return None
    if d.verdict is Verdict.WRONG:
        return False
    if d.verdict is Verdict.CORRECT:
        return True
    if d.refused:  # undecided and suspect: the decision does not guess, nor does this verdict
        return None
    return None if shares_concept(answer, reference) else False


def shares_concept(answer: str, reference: str) -> bool:
    """Whether ``answer`` names at least one of the reference's content words, after the clinical
    lexicon's canonical forms ("renal" -> kidney), light stemming and one-typo tolerance. An
    answer that shares none ("banana" for "femur") is wrong whatever a judge says; the shared
    correctness decision leaves such answers to its judge, so this is where a judge that accepts
    them shows up as disagreement."""
    from medrl.answers.clinical.lexicon import content_tokens, stem, typo_equal

    ref = {stem(t) for t in content_tokens(reference)}
    ans = {stem(t) for t in content_tokens(answer)}
    if not ref:
        return True  # nothing to compare (a reference of stop words only)
    return bool(ref & ans) or any(typo_equal(a, b) for a in ans for b in ref)


def repeated_ngram_rate(text: str, n: int = 3) -> float:
    """Share of word ``n``-grams of ``text`` that already occurred earlier in it (0 for short text)."""
    words = _WORDS.findall((text or "").casefold())
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


def _content(text: str | None) -> set[str]:
    return {w for w in _WORDS.findall((text or "").casefold()) if w not in _STOP}


def restated_steps(steps: Sequence[str], question: str | None, answer: str | None) -> tuple[int, int]:
    """(restating, total) reasoning steps: a step restates when its content words are all the
    answer's, or at least 80% of them are the question's (nothing new is said)."""
    q, a = _content(question), _content(answer)
    hits = 0
    for st in steps:
        c = _content(st)
        if not c:
            continue
        if (a and c <= a) or (q and len(c & q) >= 0.8 * len(c)):
            hits += 1
    return hits, len(steps)


def rollout_features(text: str, record: dict, n_tokens: int) -> dict[str, Any]:
    """Per-rollout monitor features: answer, guard reason and category, independent verdict,
    lengths (the answer's also relative to its reference's), repeated n-gram rate, restating
    steps, format validity."""
    from medrl.answers.completion import parse_response, split_steps

    p = parse_response(text)
    ref, q = record.get("answer"), record.get("question")
    ref = None if ref is None else str(ref)
    reason = None if p.answer is None else _guard(p.answer, ref, q)
    steps = [s.text for s in split_steps(p.reasoning)] if p.reasoning else []
    restate, n_steps = restated_steps(steps, q, p.answer)
    ans_len = len(p.answer or "")
    return {
        "answer": p.answer, "well_formed": bool(p.well_formed), "reason": reason,
        "category": "format" if p.answer is None else guard_category(reason),
        "verdict": independent_verdict(p.answer, ref, q),
        "tokens": int(n_tokens), "answer_chars": ans_len,
        # answer length over its reference's: records' references differ in length, so only this
        # ratio's growth says the policy pads its answers
        "answer_ref_ratio": ans_len / max(len(ref or ""), 1) if p.answer is not None else None,
        "ratio": len(p.reasoning or "") / max(ans_len, 1) if p.answer is not None else None,
        "repeat": repeated_ngram_rate(text), "restate": restate, "steps": n_steps,
    }


def total_rewards(rewards, weights) -> list[float | None]:
    """TRL's total reward per row: the weighted sum over the rewards that scored (``nansum``),
    None when no reward scored the row."""
    out = []
    for row in rewards:
        vals = [(float(r), float(w)) for r, w in zip(row, weights)]
        ok = [(r, w) for r, w in vals if r == r]
        out.append(sum(r * w for r, w in ok) if ok else None)
    return out


def zero_std_share(totals: Sequence[float | None], group: int) -> float:
    """Share of prompt groups (consecutive ``group`` rows) whose scored rewards are all equal."""
    n = len(totals) // max(group, 1)
    if n == 0:
        return 0.0
    flat = 0
    for g in range(n):
        vals = [v for v in totals[g * group:(g + 1) * group] if v is not None]
        flat += (max(vals) - min(vals) <= 1e-9) if vals else 1
    return flat / n


def answer_reward_index(trainer) -> int | None:
    """Index (in the trainer's reward functions) of the reward that pays the answer: the
    recipe's ``algorithm.log_rewards.answer`` (``mrpo_answer``, ``armed``, ``capo_accuracy``,
    ``steprar``, ``medix_llm``), else None (then the monitor reads the total reward)."""
    names = list(getattr(trainer, "reward_func_names", None) or [])
    alg = getattr(trainer, "medrl_algorithm", None) or {}
    logged = (alg.get("log_rewards") or {}) if isinstance(alg, dict) else {}
    name = logged.get("answer") if isinstance(logged, dict) else None
    return names.index(name) if name in names else None


def paid_as_correct(correct: Sequence[bool | None], answer_rewards: Sequence[float | None],
                    threshold: float) -> list[bool | None]:
    """What the run pays as a correct answer, per rollout: its ``correct`` column where a reward
    reads one, else its answer reward at or above ``threshold`` (MRPO's BERTScore, ARMed's
    semantic reward, ...), else None. This is the decision ``disagreement`` checks against the
    offline verdict, so recipes without a ``correct`` column are watched too."""
    out: list[bool | None] = []
    for i, c in enumerate(correct):
        a = answer_rewards[i] if i < len(answer_rewards) else None
        out.append(bool(c) if c is not None else (None if a is None else a >= threshold))
    return out


def guard_reward(signals: dict, category: str) -> float:
    """Mean reward of the rollouts refused as ``category`` this step: logged as
    ``monitor/guard_reward/<c>``, else derived from the step's mean reward and the refused
    answers' margin over the others (mean = share x hit + (1 - share) x (hit - margin))."""
    got = signals.get(f"monitor/guard_reward/{category}")
    if got is not None:
        return float(got)
    share = signals.get(f"monitor/guard/{category}") or 0.0
    margin = signals.get(f"monitor/guard_paid/{category}") or 0.0
    mean = signals.get("monitor/reward") or 0.0
    return mean + (1.0 - share) * margin


def _half_means(values: Sequence[float]) -> tuple[float, float]:
    h = len(values) // 2
    first, last = values[:h], values[len(values) - h:]
    return sum(first) / len(first), sum(last) / len(last)


def zero_variance_cause(signals: dict[str, float]) -> str:
    """The likely reason every group's rewards are equal, from one step's signals."""
    if signals.get("monitor/format_valid", 1.0) == 0.0 and signals.get("monitor/answered", 1.0) == 0.0:
        return ("no rollout has a <think>...</think><answer>...</answer> answer: the policy never produces the "
                "format (warm it up with SFT, or check data.prompt_style)")
    if signals.get("monitor/unscored", 0.0) >= 0.5:
        return ("the judged rewards could not score most rollouts (judge unreachable, timing out or replying "
                "unparseably: see judge/failures)")
    c = signals.get("monitor/correct")
    if c is not None and c == 0.0:
        return "every answer is wrong (the task is too hard for the policy, or the references do not fit the prompts)"
    if c is not None and c == 1.0:
        return "every answer is right (the data is too easy for the policy)"
    return ("every rollout of a group gets the same reward (too few generations per prompt, a sampling "
            "temperature too low, or a reward that does not vary)")



def record_key(row: dict) -> str:
    """Which prompt a rollout answers: its ``record_id``, else its question, reference and image.
    Rollouts of one prompt form one group of the disagreement test (they repeat each other's
    answers, so they are one piece of evidence, not several)."""
    rid = row.get("record_id") or row.get("id")
    if rid:
        return f"id:{rid}"
    image = row.get("image") or row.get("images")
    return f"q:{row.get('question')}|a:{row.get('answer')}|i:{image if isinstance(image, str) else ''}"


def disagreement_groups(keys: Sequence[str], verdicts: Sequence[bool | None], decisions: Sequence[bool | None]
                        ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Per prompt (rollouts sharing a :func:`record_key`, in first-seen order), the two
    directions of the disagreement test: ``(paid, wrong)`` - the rollouts the offline verdict
    calls wrong and the run decided (``decisions``: paid as correct or not; None = undecided, left
    out), and those of them the run pays - and ``(refused, right)`` - the rollouts the verdict
    calls right and the run decided, and those of them the run does not pay. A prompt without such
    a rollout is left out of that direction (it holds no evidence)."""
    wrong: dict[str, list[int]] = {}
    right: dict[str, list[int]] = {}
    for k, v, d in zip(keys, verdicts, decisions):
        if v is None or d is None:
            continue
        g = (right if v else wrong).setdefault(k, [0, 0])
        g[0] += bool(d) != bool(v)
        g[1] += 1
    return [(h, n) for h, n in wrong.values()], [(h, n) for h, n in right.values()]
