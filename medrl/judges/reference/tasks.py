"""The reference judge's other tasks: reasoning/answer consistency, grading, VQA-pair audit and
key-step extraction. Each is a pure function of the texts; :class:`ReferenceJudge` wraps them.

- consistency (CAPO Eq. 1): the answer must follow from the last two reasoning sentences - same
  yes/no polarity, or at least half of the answer's content tokens there, not negated, and no
  opposite side or qualifier.
- grading (MediX-R1 Sec. 3): binary = answer correctness (:mod:`.answers`; a one-character answer
  is an option label or count, MediX-R1 App. A.2); report rubric = round(5 x token F1).
- VQA audit (ARMed App.): empty/placeholder pairs and wh-questions answered yes/no are dropped; an
  open answer to a yes/no-style question is flagged ``needs_fix`` (the rewrite is left to an LLM
  auditor: ``new_q`` keeps the question); otherwise consistent.
- key steps (StepGRPO Sec. 3.2): from each reasoning sentence that names a medical term or the
  answer, the first few content words (at most six phrases).
"""

from __future__ import annotations

from medrl.answers.guard import guard_answer
from medrl.answers.clinical.lexicon import NEGATION_WORDS
from medrl.judges.reference.answers import _f1
from medrl.judges.reference.words import (
    _AUX, _KEY_FILLER, _META, _MODALITY_WORDS, _NEG, _ORGANS, _WH, _negated, _opposed, _sentences, canon_tokens,
    normalise,
)


def consistent(question: str, reasoning: str, answer: str) -> tuple[bool, str]:
    """Whether ``answer`` follows from the end of ``reasoning`` (CAPO Eq. 1), and why."""
    if not (reasoning or "").strip():
        return False, "empty reasoning"
    why = guard_answer(answer, None, allow_one_char=True)
    if why:
        return False, why
    sents = _sentences(reasoning)
    final = " ".join(sents[-2:])
    f_all = canon_tokens(final, True)
    a_norm = normalise(answer)
    if a_norm in ("yes", "no"):
        about = set(canon_tokens(final)) & (set(canon_tokens(question)) - {"yes", "no"})
        if "yes" in f_all[:1] or "no" in f_all[:1]:
            concl = f_all[0]
        elif about:
            concl = "no" if _negated(f_all) else "yes"
        else:
            return False, "final sentences do not address the question"
        return concl == a_norm, f"reasoning concludes {concl}, answer {a_norm}"
    a_all, a = set(canon_tokens(answer, True)), set(canon_tokens(answer))
    if not a:
        return False, "answer has no content words"
    opp = _opposed(a_all, set(f_all))
    if opp:
        return False, f"answer contradicts the conclusion ({opp})"
    cover = len(a & set(f_all)) / len(a)
    if cover < 0.5:
        return False, f"answer not in the final reasoning (coverage {cover:.2f})"
    # "no evidence of X" while answering X
    for i, t in enumerate(f_all):
        if t in a and any(w in _NEG for w in f_all[max(0, i - 4):i]) and not _negated(list(a_all)):
            return False, "the reasoning negates the answer"
    return True, f"answer follows the final reasoning (coverage {cover:.2f})"


def report_grade(reference: str, prediction: str) -> tuple[float, str]:
    """Report rubric (MediX-R1 Sec. 3): round(5 x canonical-token F1), 0 when the guard refuses."""
    why = guard_answer(prediction, reference, long_form=True)
    if why:
        return 0.0, why
    f1 = _f1(canon_tokens(prediction), canon_tokens(reference))
    return float(round(5 * f1)), f"token F1 {f1:.2f}"


def audit_vqa(question: str, answer: str) -> dict:
    """ARMed-style audit of one VQA pair: ``{"status", "new_q", "new_a", "notes"}``."""
    q, a = (question or "").strip(), (answer or "").strip()
    base = {"new_q": q, "new_a": a}
    if not q or not a or guard_answer(a, None, allow_one_char=True) in ("empty", "placeholder"):
        return {"status": "drop", **base, "notes": "heuristic: empty or placeholder question/answer"}
    yes_no = normalise(a) in ("yes", "no")
    if yes_no and _WH.match(q) and " or " not in q.lower():
        return {"status": "drop", **base, "notes": "heuristic: a wh-question answered yes/no"}
    if not yes_no and _AUX.match(q) and " or " not in q.lower():
        return {"status": "needs_fix", **base,
                "notes": "heuristic: a yes/no-style question with an open answer; "
                         "the reference judge flags but does not rewrite"}
    return {"status": "consistent", **base, "notes": "heuristic: question form matches the answer"}


def key_steps(question: str, answer: str, reasoning: str, max_words: int = 6) -> list[str]:
    """Up to 6 key steps, each a short span (at most ``max_words`` words) copied word for word from one reasoning sentence
    (StepGRPO Sec. 3.2.2: "the core few words"), so that the default StepRAR matcher finds all of
    them in the reasoning they came from. Heuristic: in every sentence that is not meta-talk, the
    window of at most 6 words holding the most medical words (organs, modalities, sides, question
    and answer words), edge stop words trimmed, widened to a negation word just before it
    ("no ... effusion" keeps its "no")."""
    ans = set(canon_tokens(answer))
    medical = _ORGANS | set(_MODALITY_WORDS) | {"left", "right"} | ans | set(canon_tokens(question))
    edge = ".,;:!?()[]{}\"'`*"

    def bare(w: str) -> str:
        return w.strip(edge).lower()

    phrases: list[str] = []
    for sent in _sentences(reasoning):
        if _META.search(sent):
            continue
        words = [w for w in sent.split() if bare(w)]
        toks = [set(canon_tokens(w)) - _KEY_FILLER for w in words]
        keys = [bool(t & medical) for t in toks]
        if not any(keys):
            continue
        size = min(max_words, len(words))
        start = max(range(len(words) - size + 1), key=lambda i: (sum(keys[i:i + size]), -i))
        end = start + size
        while end > start + 1 and not toks[end - 1]:
            end -= 1
        while start < end - 1 and not toks[start] and bare(words[start]) not in NEGATION_WORDS:
            start += 1
        for j in range(start - 1, max(-1, start - 4), -1):
            if bare(words[j]) in NEGATION_WORDS:
                start = j
                break
        phrase = " ".join(words[start:end]).strip(edge + " ")
        if phrase and phrase.lower() not in (p.lower() for p in phrases):
            phrases.append(phrase)
        if len(phrases) == 6:
            break
    return phrases
