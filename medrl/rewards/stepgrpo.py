"""StepGRPO rule-based step rewards (StepGRPO paper, Sec. 3.2, Eq. 2-3).

StepRAR, Eq. 2 (alpha = 0.1), with k = |v_match| / |v| the share of key steps v found in the
reasoning by soft matching:

    r_auc = 1 + alpha * k   if the answer is correct (ans = y)
            alpha * k       if an answer is given but wrong
            0               if there is no answer

StepRVR, Eq. 3: r_val = 1 if the reasoning is complete (delta_c) and logical (delta_l), else 0.
Two detectors (``structure``): ``"think"`` (default), medrl's heuristic over the sentences of
``<think>`` (:func:`validity_parts`), the medical-format adaptation; ``"r1vl"``, R1-VL's released
checks on its literal headers (:func:`r1vl_structure`).
The reward is r = r_auc + r_val (two TRL rewards with weight 1: ``steprar`` and ``steprvr``).

Key steps come per row in the ``key_step_forms`` column (one list of equivalent forms per key
step, as :mod:`medrl.data.curation.key_steps` writes them) or, when that is empty, in
``key_steps``: a list whose items are either a string or a list of equivalent forms of one key
step (the paper augments each step into equivalent forms; a step matches when any form does).
A row whose key steps are missing/empty is unscorable by default (``missing_key_steps="none"``);
``"zero"`` scores it with k = 0.

Soft matching (the paper names it but gives no algorithm; each mode is a project heuristic),
all on the ``<think>`` text after :func:`medrl.rewards.correctness.normalize_answer`:

- ``"soft"`` (default): every form is widened with :func:`medrl.answers.clinical.forms.equivalent_forms`
  (CT <-> computed tomography, x-ray/xray, 2/two) and matched against the reasoning as written
  and in the shared lexicon's canonical wording (:func:`medrl.answers.clinical.lexicon.canonical_text`:
  "renal" = "kidney"); a form matches when it occurs as whole
  words, or - for forms of 5+ characters - when a window of the reasoning with the form's word
  count matches it word by word: each word equal, or both of 4+ characters with a character
  similarity >= ``match_threshold`` (default 0.85; rapidfuzz's ``fuzz.ratio`` when installed,
  else difflib's ``SequenceMatcher``), so spelling slips match and other words ("massive" for
  "mass") do not. Guards
  against near-misses: numbers must be equal, a side (left/right/bilateral) named by the form
  must be the window's, and the form and the window (with up to 3 words before it in the same
  sentence, cut at "but"/"however"/...) must agree on negation ("no effusion" does not match
  "pleural effusion" and vice versa). Matching runs per sentence-level step;
- ``"fuzzy"``: the same without the widening of forms;
- ``"substring"``: whole-word occurrence of a given form only (with the negation guard);
- ``"embedding"``: the cosine between the form and its closest reasoning step
  (:func:`medrl.answers.completion.split_steps`) is >= ``match_threshold`` (default 0.7), with the
  sentence encoder of :mod:`medrl.common.embeddings` (optional; needs an encoder);
- ``"r1vl"``: R1-VL's released matcher (``src/open_r1/grpo.py``, ``key_step_single``): the texts
  of the completion's ``### Step N:`` sections joined and lower-cased, and a key step matches
  when one of its forms, lower-cased, occurs in it as a substring (no word boundaries, no
  negation guard). A completion without such sections matches nothing. Key steps for it are
  extracted R1-VL's way (:func:`medrl.judges.prompts.extract_key_steps` ``style="r1vl"``: per
  section, phrases of at most three words). The format is read end to end: the answer is the
  rest of the line after ``### The final answer is:`` (:func:`r1vl_answer`, the released
  ``accuracy_reward``'s extraction), decided by the ``"exact"`` decision below - the trainer's
  ``correct`` column reads ``<answer>``, which R1-VL's format does not write, so it is not used
  (the released code: math_verify, then string equality). No answer under the header is Eq. 2's
  null answer (0); the released code would still pay alpha * k.

Correctness of the answer (ans = y): the one per-rollout decision of
:mod:`medrl.rewards.correctness`, made once by the trainer (``algorithm.correctness``; the judge
for open-ended records by default) and read from the ``correct`` column; called without it, the
``"exact"`` decision (answer guard, then a normalised match; ``rule="rouge1"`` adds ROUGE-1 >=
``threshold``).

Guard (project addition): before Eq. 2 the answer goes through
:func:`medrl.rewards.base.answer_rejection` (shape guard, then hard mismatch: polarity,
laterality, number/unit, organ, second finding, list, hedge); a rejected answer counts as wrong
(ans != y), whatever the ``correct`` column says, so it earns alpha * k like a committed wrong
answer. Eq. 2 itself is unchanged.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Sequence

from medrl.answers.clinical.forms import equivalent_forms
from medrl.answers.clinical.lexicon import NEGATION_WORDS, canonical_text
from medrl.answers.completion import parse_response, split_steps
from medrl.rewards import REWARDS
from medrl.rewards.base import (ENCODER_HELP, Reward, column, document_options, guard_correct, parse_all,
                               reference_text, texts_of)
from medrl.rewards.correctness import CORRECTNESS_OPTION_HELP, batch_correct, check_rule, normalize_answer
from medrl.types import ParsedResponse

MATCH_MODES = ("soft", "fuzzy", "substring", "embedding", "r1vl")
DEFAULT_MATCH_THRESHOLD = {"soft": 0.85, "fuzzy": 0.85, "substring": None, "embedding": 0.7, "r1vl": None}
STRUCTURES = ("think", "r1vl")
#: R1-VL's section headers (its released StepRVR checks them literally)
R1VL_DESCRIPTION, R1VL_RATIONALES, R1VL_FINAL = "### Image Description:", "### Rationales:", "### The final answer is:"
_R1VL_STEP = re.compile(r"### Step (\d+):")
_R1VL_STEP_TEXT = re.compile(r"### Step \d+:\s*(.*?)(?=\n###|\Z)", re.DOTALL)
_R1VL_ANSWER = re.compile(r"### The final answer is:\s*\n?(.*)")  # R1-VL grpo.py accuracy_reward
SIDE_WORDS = frozenset({"left", "right", "bilateral"})
_NEGATION = NEGATION_WORDS - {"free"}  # "free air", "free fluid" are findings, not negations
_CONTRAST = frozenset({"but", "however", "although", "though", "whereas", "while"})
_NEG_CONTEXT = 3  # words before a match that can negate it ("no evidence of X")
_MIN_FUZZY_CHARS = 5  # shorter forms ("ct", "l") must match exactly

try:  # rapidfuzz is optional: the same Indel-based ratio as difflib, much faster
    from rapidfuzz.fuzz import ratio as _rf_ratio

    def _similar(form: str, window: str, threshold: float) -> bool:
        return _rf_ratio(form, window, score_cutoff=threshold * 100) >= threshold * 100
except ImportError:  # pragma: no cover - depends on the environment
    def _similar(form: str, window: str, threshold: float) -> bool:
        sm = difflib.SequenceMatcher(None, form, window, autojunk=False)
        return (sm.real_quick_ratio() >= threshold and sm.quick_ratio() >= threshold
                and sm.ratio() >= threshold)


def accuracy_reward(answered: bool, correct: bool, k: float, alpha: float = 0.1) -> float:
    """StepRAR, Eq. 2: 1 + alpha*k if correct, alpha*k if answered but wrong, 0 if no answer."""
    if not answered:
        return 0.0
    return (1.0 if correct else 0.0) + alpha * k


def key_step_forms(step: Any) -> list[str]:
    """The non-empty equivalent forms of one key step (a string or a list of strings)."""
    forms = [step] if isinstance(step, str) else list(step or [])
    return [f for f in forms if isinstance(f, str) and normalize_answer(f)]


def widened_forms(forms: Sequence[str]) -> list[str]:
    """``forms`` plus :func:`medrl.answers.clinical.forms.equivalent_forms` of each and their canonical
    lexicon wording, normalised, deduplicated."""
    out: list[str] = []
    for f in forms:
        for g in (*equivalent_forms(f), canonical_text(f)):
            n = normalize_answer(g)
            if n and n not in out:
                out.append(n)
    return out


def _has_digit(w: str) -> bool:
    return any(c.isdigit() for c in w)


def _sides(words: list[str]) -> set[str]:
    return set(canonical_text(" ".join(words)).split()) & SIDE_WORDS


def _guards_ok(form_words: list[str], window: list[str], before: list[str]) -> bool:
    """Near-miss guards: equal numbers, the form's side kept, negation agreeing."""
    if {w for w in form_words if _has_digit(w)} != {w for w in window if _has_digit(w)}:
        return False
    sides = _sides(form_words)  # "lt"/"sinistral" are "left" in the lexicon's wording
    if sides and sides != _sides(window):
        return False
    for i in range(len(before) - 1, -1, -1):  # a contrast word ends the negation's reach
        if before[i] in _CONTRAST:
            before = before[i + 1:]
            break
    form_neg = bool(set(form_words) & _NEGATION)
    win_neg = bool(set(window) & _NEGATION) or (not form_neg and bool(set(before) & _NEGATION))
    return form_neg == win_neg


def _form_matches(form: str, words: list[str], threshold: float | None) -> bool:
    """Whole-word occurrence (``threshold`` None) or fuzzy window match of one form, guarded."""
    fw = normalize_answer(form).split()
    n = len(fw)
    if not n:
        return False
    for i in range(len(words) - n + 1):
        if words[i:i + n] == fw and _guards_ok(fw, fw, words[max(0, i - _NEG_CONTEXT):i]):
            return True
    if threshold is None or len(" ".join(fw)) < _MIN_FUZZY_CHARS:
        return False
    for i in range(len(words) - n + 1):
        window = words[i:i + n]
        if (all(a == b or (min(len(a), len(b)) >= 4 and _similar(a, b, threshold)) for a, b in zip(fw, window))
                and _guards_ok(fw, window, words[max(0, i - _NEG_CONTEXT):i])):
            return True
    return False


def _substring(form: str, reasoning_norm: str) -> bool:
    return _form_matches(form, reasoning_norm.split(), None)


def _fuzzy(form: str, reasoning_norm: str, threshold: float) -> bool:
    return _form_matches(form, reasoning_norm.split(), threshold)


def _embedding_matched(forms_per_step: list[list[str]], steps: list[str], threshold: float,
                       model: str | None) -> int:
    from medrl.common.embeddings import encode

    flat = [f for forms in forms_per_step for f in forms]
    if not flat or not steps:
        return 0
    emb = encode(flat + steps, model)
    sims = emb[: len(flat)] @ emb[len(flat):].T  # cosine: rows are L2-normalised
    best = iter(sims.max(axis=1).tolist())
    return sum(1 for forms in forms_per_step if max(next(best) for _ in forms) >= threshold)


def r1vl_answer(text: str | None) -> str | None:
    """R1-VL's final answer (``src/open_r1/grpo.py``, ``accuracy_reward``): the text after the first
    ``### The final answer is:`` on its line (the next line when the header ends its own), stripped;
    None when there is no such header or nothing follows it (the released code then compares the
    whole completion; medrl reads no answer, Eq. 2's null). Over the answer cap: None."""
    from medrl.answers.completion import cap_answer

    m = _R1VL_ANSWER.search(text or "")
    return cap_answer(m.group(1).strip() or None) if m else None


def r1vl_parsed(text: str | None) -> ParsedResponse:
    """A completion in R1-VL's format read as a :class:`~medrl.types.ParsedResponse`: the
    reasoning is the text before the final-answer header, the answer :func:`r1vl_answer`."""
    text = text or ""
    head = text.find(R1VL_FINAL)
    answer = r1vl_answer(text)
    return ParsedResponse(modality=None, reasoning=(text[:head] if head >= 0 else text).strip() or None,
                          answer=answer, well_formed=r1vl_structure(text)["logical"] and answer is not None)


def r1vl_step_text(text: str | None) -> str:
    """The ``### Step N:`` sections of a completion, joined and lower-cased (R1-VL's matcher input)."""
    return " ".join(_R1VL_STEP_TEXT.findall(text or "")).lower()


def key_step_ratio(reasoning: str | None, key_steps: Sequence[Any], mode: str = "soft",
                   threshold: float | None = None, model: str | None = None) -> float:
    """k = |v_match| / |v| (StepGRPO Sec. 3.2) for one reasoning text; 0.0 without reasoning.

    ``key_steps`` items are strings or lists of equivalent forms; items with no usable form
    still count in |v|. Raises ValueError for an empty ``key_steps`` or an unknown ``mode``.
    """
    if mode not in MATCH_MODES:
        raise ValueError(f"unknown key-step match mode {mode!r}; known: {', '.join(MATCH_MODES)}")
    if not key_steps:
        raise ValueError("key_step_ratio: key_steps is empty")
    thr = DEFAULT_MATCH_THRESHOLD[mode] if threshold is None else threshold
    forms_per_step = [key_step_forms(s) for s in key_steps]
    if not reasoning or not reasoning.strip():
        return 0.0
    if mode == "r1vl":  # ``reasoning`` is the whole completion: its ### Step sections are read
        steps_text = r1vl_step_text(reasoning)
        return sum(1 for forms in forms_per_step if any(f.lower() in steps_text for f in forms)) / len(forms_per_step)
    if mode == "embedding":
        usable = [f for f in forms_per_step if f]
        matched = _embedding_matched(usable, [s.text for s in split_steps(reasoning)], thr, model)
    else:
        # match inside each sentence-level step, so a negation never reaches across sentences
        texts = [st.text for st in split_steps(reasoning)] or [reasoning]
        sentences = [normalize_answer(t).split() for t in texts]
        if mode == "soft":  # also in the lexicon's canonical wording ("renal" = "kidney")
            forms_per_step = [widened_forms(forms) for forms in forms_per_step]
            sentences += [normalize_answer(canonical_text(t)).split() for t in texts]
        sentences = [w for w in sentences if w]
        matched = sum(1 for forms in forms_per_step
                      if any(_form_matches(f, words, thr) for f in forms for words in sentences))
    return matched / len(forms_per_step)


# Heuristic cues of a background / image-description step (StepRVR completeness): words that
# describe what the image shows or restate what the question asks.
DESCRIPTION_CUES = re.compile(
    r"""\b(?:image|images|picture|scan|film|radiograph\w*|x-?ray|ct|mri|mr|ultrasound|sonogra\w*
      |view|slice|section|projection|modality|shows?|showing|shown|demonstrat\w*|reveal\w*
      |visible|seen|appear\w*|depict\w*|display\w*|observ\w*|there\s+(?:is|are)|question
      |asks?|asked|asking)\b""",
    re.IGNORECASE | re.VERBOSE,
)


# Heuristic cues of a step that states the final answer ("The answer is X", "Answer: X").
ANSWER_CUES = re.compile(
    r"""\b(?:(?:the|my|final|correct|so|thus|therefore)\s+)*answer\s*(?:is|was|would\s+be|should\s+be
      |must\s+be|[:=\-])|\b(?:final|most\s+likely)\s+diagnosis\s+is\b|\bin\s+conclusion\b
      |\bto\s+conclude\b""",
    re.IGNORECASE | re.VERBOSE,
)


def _substantive_steps(raw: list[str], min_step_words: int) -> list[int]:
    """Indices of the steps with at least ``min_step_words`` words, repeats (normalised) dropped."""
    out, seen = [], set()
    for i, text in enumerate(raw):
        norm = normalize_answer(text)
        if len(norm.split()) >= min_step_words and norm not in seen:
            seen.add(norm)
            out.append(i)
    return out


def validity_parts(text: str, min_reasoning_steps: int = 2, background_window: int = 2,
                   min_step_words: int = 3) -> dict:
    """Heuristic StepRVR checks (Eq. 3) on one response; the paper gives no detector.

    Steps are the :func:`medrl.answers.completion.split_steps` of the ``<think>`` text that have at least
    ``min_step_words`` words, repeats dropped (padding such as "Blah. Blah." is no step).

    - ``background``: index of the first step containing a :data:`DESCRIPTION_CUES` word (an
      image/question description) that does not state the answer, or None;
    - ``answer_early``: index (among all split steps, short ones included) of the first step
      before the last counted step that states the answer (:data:`ANSWER_CUES`, or the step is
      the ``<answer>`` text itself), or None;
    - completeness (``complete``): a background step, at least ``min_reasoning_steps`` other
      steps, and a non-empty ``<answer>``;
    - logic (``logical``): the description comes first - the background step is among the first
      ``background_window`` steps and at least ``min_reasoning_steps`` steps follow it - no step
      before the last states the answer, and the answer block comes after the reasoning with
      nothing after it (the strict format check).
    """
    parsed = parse_response(text)
    raw = [s.text for s in split_steps(parsed.reasoning or "")]
    keep = _substantive_steps(raw, min_step_words)
    steps = [raw[i] for i in keep]
    answer_norm = normalize_answer(parsed.answer)

    def states_answer(step: str) -> bool:
        return bool(ANSWER_CUES.search(step)) or (bool(answer_norm) and normalize_answer(step) == answer_norm)

    background = next((i for i, s in enumerate(steps) if DESCRIPTION_CUES.search(s) and not states_answer(s)),
                      None)
    # any step (short ones too) before the last substantive step that states the answer
    answer_early = next((i for i in range(keep[-1] if keep else 0) if states_answer(raw[i])), None)
    answered = bool(answer_norm)
    complete = background is not None and len(steps) - 1 >= min_reasoning_steps and answered
    logical = (background is not None and background < background_window
               and len(steps) - background - 1 >= min_reasoning_steps and answer_early is None
               and parsed.well_formed)
    return {"steps": len(steps), "background": background, "answer_early": answer_early,
            "answered": answered, "complete": complete, "logical": logical}


def r1vl_structure(text: str) -> dict:
    """R1-VL's released StepRVR checks (``src/open_r1/grpo.py``) on a completion's literal headers.

    - complete: ``### Image Description:``, ``### Rationales:``, ``### Step 1:`` and ``### The final
      answer is:`` all occur;
    - logical: there are ``### Step N:`` headers numbered 1, 2, ... in order, and the first final-answer
      header comes after the last step header (or the completion ends with that header).
    """
    text = text or ""
    complete = all(h in text for h in (R1VL_DESCRIPTION, R1VL_RATIONALES, "### Step 1:", R1VL_FINAL))
    steps = list(_R1VL_STEP.finditer(text))
    numbered = bool(steps) and [int(m.group(1)) for m in steps] == list(range(1, len(steps) + 1))
    final = text.find(R1VL_FINAL)
    last_ok = text.strip().endswith(R1VL_FINAL) or (final >= 0 and bool(steps) and final >= steps[-1].end())
    return {"complete": complete, "logical": numbered and last_ok, "steps": len(steps)}


def validity_reward(text: str, min_reasoning_steps: int = 2, background_window: int = 2,
                    min_step_words: int = 3, structure: str = "think") -> float:
    """StepRVR, Eq. 3: 1.0 if the response is complete and logical, else 0.0; ``structure``
    "think" (medrl's heuristic, :func:`validity_parts`) or "r1vl" (:func:`r1vl_structure`)."""
    if structure == "r1vl":
        p = r1vl_structure(text)
    else:
        p = validity_parts(text, min_reasoning_steps, background_window, min_step_words)
    return 1.0 if p["complete"] and p["logical"] else 0.0


def _row_key_steps(forms_row: Any, steps_row: Any) -> list:
    """One row's key steps: its ``key_step_forms`` (a list of form lists) when non-empty, else
    its ``key_steps`` (strings or form lists; a bare string is one step)."""
    if isinstance(forms_row, (list, tuple)) and any(key_step_forms(f) for f in forms_row):
        return list(forms_row)
    return [steps_row] if isinstance(steps_row, str) else list(steps_row or [])


def steprar_batch(completions, columns, *, reward="steprar", alpha=0.1, match="soft",
                  match_threshold=None, model=None, rule="normalized_match", threshold=0.5,
                  use_correct_column=True, missing_key_steps="none") -> list[float | None]:
    """Batch function of the ``steprar`` reward (options: see :func:`make_steprar`)."""
    n = len(completions)
    r1vl = match == "r1vl"  # R1-VL's format read whole: the answer under its final-answer header
    parsed = [r1vl_parsed(t) for t in texts_of(completions)] if r1vl else parse_all(completions)
    refs = [reference_text(r) for r in column(columns, "answer", n, reward=reward)]
    keys = column(columns, "key_steps", n, reward=reward)
    forms = column(columns, "key_step_forms", n, reward=reward)
    answers = [p.answer for p in parsed]
    # the trainer's ``correct`` column reads <answer>: R1-VL's answer is decided here (exact)
    correct = batch_correct(answers, refs, columns, use_column=use_correct_column and not r1vl,
                            rule=rule, threshold=threshold, reward=reward)
    correct = guard_correct(parsed, refs, correct, columns, reward=reward)  # the guard (module docstring)
    out: list[float | None] = []
    texts = texts_of(completions)
    for p, text, fs, ks, ok in zip(parsed, texts, forms, keys, correct):
        ks = _row_key_steps(fs, ks)
        if ok is None or (not ks and missing_key_steps == "none"):
            from medrl.types import UNSCORABLE  # undecided correctness / no key steps: excluded

            out.append(UNSCORABLE)
            continue
        source = text if match == "r1vl" else p.reasoning  # R1-VL reads the ### Step sections of the completion
        k = key_step_ratio(source, ks, match, match_threshold, model) if ks else 0.0
        out.append(accuracy_reward(bool((p.answer or "").strip()), ok, k, alpha))
    return out


def steprvr_batch(completions, columns, *, reward="steprvr", min_reasoning_steps=2,
                  background_window=2, min_step_words=3, structure="think") -> list[float]:
    return [validity_reward(t, min_reasoning_steps, background_window, min_step_words, structure)
            for t in texts_of(completions)]


@REWARDS.register("steprar")
def make_steprar(*, alpha: float = 0.1, match: str = "soft",
                 match_threshold: float | None = None, model: str | None = None,
                 rule: str = "normalized_match", threshold: float = 0.5,
                 use_correct_column: bool = True, missing_key_steps: str = "none") -> Reward:
    """StepRAR (Eq. 2). Options: ``alpha``; key-step ``match`` mode (soft | fuzzy | substring |
    embedding | r1vl) and ``match_threshold``; ``model`` (embedding matching); correctness
    ``rule``/``threshold``/``use_correct_column``; ``missing_key_steps`` "none" (row
    unscorable) or "zero" (k = 0). Reads ``key_step_forms`` when given, else ``key_steps``."""
    check_rule(rule)
    if match not in MATCH_MODES:
        raise ValueError(f"steprar: unknown match mode {match!r}; known: {', '.join(MATCH_MODES)}")
    if missing_key_steps not in ("none", "zero"):
        raise ValueError(f"steprar: missing_key_steps is 'none' or 'zero', got {missing_key_steps!r}")
    # reads the trainer's ``correct`` column (medrl.rewards.correctness, from <answer>) unless told not
    # to; "r1vl" reads R1-VL's own answer line instead
    reads = ("correct",) if use_correct_column and match != "r1vl" else ()
    return Reward("steprar", steprar_batch, reads=reads, alpha=alpha,
                  match=match, match_threshold=match_threshold, model=model, rule=rule, threshold=threshold,
                  use_correct_column=use_correct_column, missing_key_steps=missing_key_steps)


document_options(
    make_steprar, alpha="StepGRPO Eq. 2: weight of the key-step match k in StepRAR",
    match="how a key step counts as matched: soft (normalised forms), fuzzy (character similarity), substring, "
          "embedding (cosine of sentence embeddings) or r1vl (R1-VL's released format end to end: its ### Step "
          "sections matched as key_step_single does, its answer read under '### The final answer is:')",
    match_threshold="similarity a match needs (None: the mode's default: soft/fuzzy 0.85, embedding 0.7)",
    model=f"sentence encoder for match embedding: {ENCODER_HELP}",
    missing_key_steps="a record without key steps: none (the row is unscorable) or zero (k = 0)",
    **CORRECTNESS_OPTION_HELP)


make_steprar.uses_correctness = True


@REWARDS.register("steprvr")
def make_steprvr(*, min_reasoning_steps: int = 2, background_window: int = 2, min_step_words: int = 3,
                 structure: str = "think") -> Reward:
    """StepRVR (Eq. 3); every row is scorable. ``structure``: "think" (medrl's heuristic over the
    ``<think>`` sentences, default) or "r1vl" (R1-VL's literal section headers)."""
    if structure not in STRUCTURES:
        raise ValueError(f"steprvr: structure must be one of {', '.join(STRUCTURES)}, got {structure!r}")
    return Reward("steprvr", steprvr_batch, min_reasoning_steps=min_reasoning_steps,
                  background_window=background_window, min_step_words=min_step_words, structure=structure)


document_options(
    make_steprvr, min_reasoning_steps="StepGRPO Eq. 3: steps a complete reasoning needs besides its description",
    background_window="the description of the image/question must be among the first this many steps (logic)",
    min_step_words="a sentence of the reasoning counts as a step with at least this many words",
    structure="think (medrl's heuristic over the <think> sentences) or r1vl (R1-VL's literal section headers)")
