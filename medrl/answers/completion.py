"""A completion read whole: modality tag, ``<think>`` reasoning, the one ``<answer>``, format check.

The rollout format shared by the papers (MediX-R1, arXiv 2602.23363, Sec. 2.2;
ARMed, arXiv 2508.12957, Eq. 1; MRPO, arXiv 2606.31825, App. C.1) is::

    [<MODALITY_TAG>] <think> reasoning </think> <answer> answer </answer>

Parsing is tolerant of tag case and stray whitespace inside the brackets (``< THINK >``) and
never raises on arbitrary text. The completion is read whole, not up to its first answer block:
a completion that writes more than one answer, an answer block inside the reasoning, an unclosed
second answer block, or text after its answer block that states something else has *no* answer
(:func:`answer_problem`; project rule, the papers read the first block). The later sections
split the reasoning into sentence steps and map a generated completion's token ids to character
offsets of its decoded text (what MRPO's step -> token alignment and the credit log need).
"""

from __future__ import annotations

import re
from typing import Sequence

from medrl.types import ParsedResponse, Step

_TAG = {
    name: (
        re.compile(rf"<\s*{name}\s*>", re.IGNORECASE),
        re.compile(rf"<\s*/\s*{name}\s*>", re.IGNORECASE),
    )
    for name in ("think", "answer")
}
_ANY_TAG = re.compile(r"<\s*/?\s*(?:think|answer)\s*>", re.IGNORECASE)
# Reading (not the format check): Qwen3-family models write their reasoning in <thinking>; MRPO's
# code reads that tag as reasoning too. The strict format check above stays on <think>.
_TAG["reasoning"] = (re.compile(r"<\s*think(?:ing)?\s*>", re.IGNORECASE),
                     re.compile(r"<\s*/\s*think(?:ing)?\s*>", re.IGNORECASE))


def _block(text: str, name: str, start: int = 0) -> tuple[int, int, int, int] | None:
    """Find ``<name>...</name>`` from ``start``: (open_start, inner_start, inner_end, close_end)."""
    open_re, close_re = _TAG[name]
    m_open = open_re.search(text, start)
    if not m_open:
        return None
    m_close = close_re.search(text, m_open.end())
    if not m_close:
        return None
    return m_open.start(), m_open.end(), m_close.start(), m_close.end()


def _stripped_span(text: str, a: int, b: int) -> tuple[int, int]:
    inner = text[a:b]
    lead = len(inner) - len(inner.lstrip())
    trail = len(inner) - len(inner.rstrip())
    return a + lead, max(a + lead, b - trail)


def is_well_formed(text: str) -> bool:
    """The strict format check (MediX-R1 R_format; ARMed R_f).

    From the first ``<think>`` to the end (trailing whitespace ignored) the text must be exactly
    one ``<think>...</think>``, optional whitespace, one ``<answer>...</answer>``; neither block
    may contain another think/answer tag, and no think/answer tag may come before the first
    ``<think>`` (an answer block must follow the reasoning, so an answer written before the thinking cannot pass). Project choice: the papers' regex
    ``<think>.*?</think>\\s*<answer>.*?</answer>`` with ``fullmatch`` would also accept a second
    answer block hidden inside the first, which we reject.
    """
    if not isinstance(text, str):
        return False
    think = _block(text, "think")
    if think is None:
        return False
    o_start, t_in, t_out, t_end = think
    if _ANY_TAG.search(text, 0, o_start):  # a stray <answer> (or </think>) before the reasoning block
        return False
    if _ANY_TAG.search(text, t_in, t_out):
        return False
    rest = text[t_end:]
    m = re.match(r"\s*", rest)
    ans = _block(text, "answer", t_end + m.end())
    if ans is None or ans[0] != t_end + m.end():
        return False
    _, a_in, a_out, a_end = ans
    if _ANY_TAG.search(text, a_in, a_out):
        return False
    return text[a_end:].strip() == ""


#: Longest question and answer text read, in characters (``$MEDRL_MAX_QUESTION_CHARS`` overrides).
#: Medical VQA questions and answers are under 1,000 characters; a longer one is a broken record
#: or a degenerate rollout. Questions are checked at load time (:mod:`medrl.data.validate`),
#: answers when a completion is parsed (:func:`cap_answer`).
MAX_TEXT_CHARS = 20_000


def max_question_chars() -> int:
    """:data:`MAX_TEXT_CHARS`, or ``$MEDRL_MAX_QUESTION_CHARS`` when set to a positive integer."""
    import os

    raw = os.environ.get("MEDRL_MAX_QUESTION_CHARS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_TEXT_CHARS


def max_answer_chars() -> int:
    """The longest answer read, in characters: the same cap as questions (:func:`max_question_chars`)."""
    return max_question_chars()


def cap_answer(answer: str | None) -> str | None:
    """``answer``, or None when it is longer than :func:`max_answer_chars`.

    No medical answer is longer than the longest question medrl accepts; a longer one is a
    degenerate rollout (an echoed document, a repeated phrase). Reading it as no answer before
    any reward sees it keeps every reward's cost bounded (an encoder or an answer check on
    200,000 characters takes seconds per rollout) and gives it what a missing answer gets.
    """
    if answer is not None and len(answer) > max_answer_chars():
        return None
    return answer


#: end-of-turn markers a decoded completion may still carry after its answer (they say nothing)
_END_MARKERS = re.compile(r"<\|(?:im_end|endoftext|end_of_text|eot_id|eot|end|eos)\|>|</s>|<eos>|<end_of_turn>",
                          re.IGNORECASE)
#: words a model may close with after its answer that state nothing about it (a closed list:
#: "I hope this helps", "Let me know if you need anything else", "Thank you")
CLOSING_WORDS = frozenset("""i hope this that helps help let me know if you need anything else more thank thanks glad
    to happy am confident""".split())
_WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?")
#: why a completion that writes an answer has none (values of :class:`medrl.answers.Reason`)
MULTIPLE_ANSWERS, UNCLOSED_ANSWER = "multiple_answers", "unclosed_answer"
ANSWER_IN_REASONING, TEXT_AFTER_ANSWER = "answer_in_reasoning", "text_after_answer"


def _reasoning_end(text: str, think: tuple[int, int, int, int] | None) -> tuple[int, int] | None:
    """(start, end) of the reasoning's text: the ``<think>`` block, or - when the chat template
    wrote the opening tag into the prompt - everything before a closing ``</think>``."""
    if think is not None:
        return think[1], think[2]
    close = _TAG["reasoning"][1].search(text)
    return (0, close.start()) if close else None


def _trailing_problem(trailing: str, answer: str) -> str | None:
    """Why text after the answer block makes the answer unreadable, or None: it may hold nothing
    but spaces, punctuation and end-of-turn markers, a closing courtesy (:data:`CLOSING_WORDS`),
    or the same answer again after a listed frame ("The answer is X.")."""
    rest = _END_MARKERS.sub(" ", trailing)
    if not any(ch.isalnum() for ch in rest):
        return None
    if len(rest) > 4 * len(answer) + 200:
        return f"{TEXT_AFTER_ANSWER}: {len(rest)} characters after the answer block"
    low = rest.lower()
    if not any(ch.isdigit() for ch in low) and set(_WORDS.findall(low)) <= CLOSING_WORDS:
        return None
    from medrl.answers.clinical.lexicon import canonical_text
    from medrl.answers.equivalence.compare import exact_key
    from medrl.answers.equivalence.normalise import unwrap_markup
    from medrl.answers.rewrites import strip_frames

    again = strip_frames(unwrap_markup(rest), answer)  # "**Final answer:** X"
    if exact_key(again) == exact_key(answer) or canonical_text(again) == canonical_text(answer):
        return None  # the answer restated
    return f"{TEXT_AFTER_ANSWER}: {' '.join(rest.split())[:60]!r} after the answer block"


def _problem(text: str, think, ans) -> str | None:
    open_a, close_a = _TAG["answer"]
    reasoning = _reasoning_end(text, think)
    if reasoning is not None and (open_a.search(text, *reasoning) or close_a.search(text, *reasoning)):
        return f"{ANSWER_IN_REASONING}: an answer tag inside the reasoning"
    if ans is None:
        return None
    start, a_in, a_out, a_end = ans
    if _ANY_TAG.search(text, a_in, a_out):
        return f"{MULTIPLE_ANSWERS}: a think/answer tag inside the answer block"
    if open_a.search(text, 0, start):
        return f"{MULTIPLE_ANSWERS}: another answer block before this one"
    second = open_a.search(text, a_end)
    if second:
        if close_a.search(text, second.end()):
            return f"{MULTIPLE_ANSWERS}: a second answer block"
        return f"{UNCLOSED_ANSWER}: a second answer block left open"
    if _ANY_TAG.search(text, a_end):
        return f"{TEXT_AFTER_ANSWER}: a think/answer tag after the answer block"
    return _trailing_problem(text[a_end:], text[a_in:a_out].strip())


def answer_problem(text: str | None) -> str | None:
    """Why the completion ``text`` has no answer although it writes one - more than one answer
    block (``multiple_answers``; a tag inside the block, a block before the reasoning and
    another after it), an unclosed second block (``unclosed_answer``), an answer tag inside the
    reasoning (``answer_in_reasoning``), text after the answer block that is not the same answer
    again (``text_after_answer``) - as ``"<reason>: <detail>"``, or None."""
    return parse_response(text or "").answer_problem


def parse_response(text: str) -> ParsedResponse:
    """Split a completion into modality tag, reasoning, answer and the format flag.

    - ``modality``: the stripped text before the first ``<think>`` (None if there is no
      ``<think>`` or nothing precedes it);
    - ``reasoning``: inside the first ``<think>...</think>`` (None if the block is missing);
      Qwen3's ``<thinking>...</thinking>`` is read the same way (``well_formed`` still asks for
      ``<think>``, the papers' format);
    - ``answer``: inside the ``<answer>...</answer>`` block after the reasoning block, or anywhere
      if there is no reasoning block (None if missing); None, with ``answer_problem`` saying why,
      when the completion read whole has no one answer (:func:`answer_problem`);
    - ``well_formed``: :func:`is_well_formed`.

    An answer over the length cap (:func:`cap_answer`, the questions' cap) is read as no answer
    (``answer`` None, not well formed), before any reward sees it.
    Never raises; non-string input parses as an empty, malformed response.
    """
    if not isinstance(text, str):
        return ParsedResponse(None, None, None, False)
    think = _block(text, "reasoning")
    modality = reasoning = answer = None
    r_span = a_span = None
    search_from = 0
    open_think = _TAG["reasoning"][0].search(text)
    if open_think:
        before = text[: open_think.start()].strip()
        modality = before or None
    if think is not None:
        _, a, b, end = think
        r_span = _stripped_span(text, a, b)
        reasoning = text[r_span[0] : r_span[1]]
        search_from = end
    elif _TAG["reasoning"][1].search(text):  # the opening tag was in the prompt (chat templates)
        search_from = _TAG["reasoning"][1].search(text).end()
    ans = _block(text, "answer", search_from)
    problem = _problem(text, think, ans)
    if ans is not None and problem is None:
        _, a, b, _ = ans
        a_span = _stripped_span(text, a, b)
        answer = cap_answer(text[a_span[0] : a_span[1]])
        if answer is None:
            a_span = None
    return ParsedResponse(
        modality=modality,
        reasoning=reasoning,
        answer=answer,
        well_formed=(a_span is not None or ans is None) and problem is None and is_well_formed(text),
        reasoning_span=r_span,
        answer_span=a_span,
        answer_problem=problem,
    )


def completion_text(completion) -> str:
    """The text of a TRL completion: a plain string, or a conversational list of messages.

    TRL passes ``completions`` as strings for standard datasets and as
    ``[{"role": "assistant", "content": ...}]`` for conversational ones; content may itself be
    a list of ``{"type": "text", "text": ...}`` parts.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        msg = completion[-1]
        if isinstance(msg, dict):
            content = msg.get("content", "")
            if isinstance(content, list):
                parts = (p.get("text") for p in content if isinstance(p, dict))
                return "".join(t for t in parts if isinstance(t, str))
            return content if isinstance(content, str) else ""
    return ""


# --------------------------------------------------------------------------------------------
# Sentence-level reasoning steps (MRPO, arXiv 2606.31825, Sec. 3 and 4.2: the reasoning
# is split into K sentence-level steps r_1..r_K) and their token spans (Eq. 7 acts per token).
# --------------------------------------------------------------------------------------------

# Line breaks always end a step. Same characters as str.splitlines() except the rare
# information separators, which only count as whitespace.
_LINE = re.compile(r"[^\n\r\x0b\x0c\x85\u2028\u2029]+")

# List markers at the start of a step: "1." "2)" "(3)" "Step 2:" "**Step 2:**" "- " "* " "• "
# "## ". They are formatting, not content: they are left out of the step text (their tokens then
# belong to no step and keep the sequence-level advantage).
_MARKER = re.compile(
    r"""(?:
        \#{1,6}(?=\s)                                   # markdown heading
      | [-*+\u2022\u2023\u25e6\u00b7\u2013\u2014](?=\s) # bullets
      | \(?\d{1,3}[.)](?=\s|$)                          # 1.  2)  (3)
      | \*{0,2}step\s*\d{1,3}\s*[:.)\-\u2013]?\*{0,2}[:.)\-\u2013]?(?=\s|$)   # Step 2:
    )\s*""",
    re.IGNORECASE | re.VERBOSE,
)

# A candidate sentence end: terminal punctuation, optional closing quotes/brackets, then
# whitespace or the end of the line. CJK full stops end a sentence without a following space.
_END = re.compile(r"""[.!?\u2026]+["'\u2019\u201d)\]]*(?=\s|$)|[\u3002\uff01\uff1f]+""")

# Words that end with a period but (almost) never end a sentence. Compared in lower case
# without the final period. Units such as "cm." are *not* here: "3 cm. The lesion" ends a
# sentence, while "3 cm. in diameter" does not split because a lower-case word follows.
_ABBREVIATIONS = frozenset(
    "e.g i.e eg ie approx vs v dr drs fig figs cf mr mrs ms prof eq eqs ref refs resp incl "
    "viz al ca esp est".split()
)
# Abbreviations only before a number ("No. 3", "Vol. 2"); "no." before a word ends a sentence
# ("The answer is no. The lung is clear.").
_NUMBER_ABBREVIATIONS = frozenset("no nos vol pp p".split())


def _is_sentence_end(line: str, m: re.Match) -> bool:
    """Heuristic: does the punctuation matched by ``m`` end a sentence inside ``line``?"""
    if m.group(0)[0] in "\u3002\uff01\uff1f":
        return True
    rest = line[m.end():].lstrip()
    if not rest:
        return True
    nxt = rest[0]
    if nxt.islower():  # "3 cm. in diameter", "e.g. the"
        return False
    if "." not in m.group(0) or m.group(0).startswith(".."):
        return True  # "!" / "?" / "..." before a non-lower-case character
    word = line[: m.start()].rsplit(None, 1)[-1] if line[: m.start()].strip() else ""
    word = word.lstrip("\"'([{\u201c\u2018").lower()
    if word in _ABBREVIATIONS:
        return False
    if word in _NUMBER_ABBREVIATIONS and nxt.isdigit():
        return False
    return True


#: step splitters: medrl's (default) or MRPO's released one (:func:`released_split_steps`)
SPLITTERS = ("medrl", "released")
# the released code's fallback when nltk cannot split (grpo_vqa_MRPO.py, split_like_reference)
_RELEASED_FALLBACK = re.compile(r"(?<=[.!?])\s+(?=[^\s])")
_NUMBER_ONLY = re.compile(r"\s*\d+\.\s*")


def released_split_steps(reasoning: str) -> list[Step]:
    """MRPO's released step splitter (dmis-lab/MRPO ``grpo_vqa_MRPO.py``,
    ``split_think_sentences_with_spans``), re-implemented: nltk's ``sent_tokenize`` when nltk and
    its punkt data are installed; without them the released fallback, a split after ``.``, ``!``
    or ``?`` followed by whitespace (no abbreviation or line-break handling); then a fragment that
    is only a number and a period ("1.") is merged with the sentence after it. Spans are found
    scanning forward, so ``text == reasoning[start:end]`` for every step; a sentence the
    tokenizer changed and that cannot be found after the previous one is dropped (the released
    code searches again from the start). Never raises; non-string input gives ``[]``."""
    if not isinstance(reasoning, str) or not reasoning.strip():
        return []
    try:
        from nltk.tokenize import sent_tokenize

        parts = sent_tokenize(reasoning)
    except (ImportError, LookupError):  # no nltk, or no punkt data
        parts = _RELEASED_FALLBACK.split(reasoning)
    found: list[Step] = []
    pos = 0
    for seg in (p.strip() for p in parts):
        i = reasoning.find(seg, pos) if seg else -1
        if i < 0:
            continue
        found.append(Step(seg, i, i + len(seg)))
        pos = i + len(seg)
    steps: list[Step] = []
    k = 0
    while k < len(found):
        if _NUMBER_ONLY.fullmatch(found[k].text) and k + 1 < len(found):  # "1." + the next sentence
            a, b = found[k].start, found[k + 1].end
            steps.append(Step(reasoning[a:b], a, b))
            k += 2
            continue
        steps.append(found[k])
        k += 1
    return steps


def split_steps(reasoning: str, splitter: str = "medrl") -> list[Step]:
    """Split reasoning text into sentence-level steps r_1..r_K (heuristic sentence splitter).

    ``splitter="released"``: MRPO's released splitter instead (:func:`released_split_steps`).

    MRPO (arXiv 2606.31825, Sec. 3 and Eq. 7) scores and reshapes the reasoning per
    sentence-level step; the paper does not state its splitter (the released code uses nltk's
    ``sent_tokenize``, :func:`released_split_steps`); medrl's default is this one:

    - every line break ends a step; empty lines give no step;
    - inside a line a step ends at ``.``/``!``/``?``/``...`` (plus closing quotes/brackets)
      followed by whitespace and a character that is not lower case, or at a CJK full stop;
    - no split after common abbreviations (``e.g.``, ``i.e.``, ``approx.``, ``vs.``, ``Dr.``,
      ``Fig.``, ``et al.``, ...), nor after ``No.``/``Vol.`` before a number; decimals
      (``2.5 cm``) never split (no whitespace after the point); a unit before a lower-case word
      (``3 cm. in size``) does not split;
    - leading list markers (``1.``, ``2)``, ``(3)``, ``Step 2:``, ``- ``, ``* ``, ``•``) are
      not part of the step; a step with no letter or digit (``...``, ``---``) is dropped.

    Each :class:`Step` has ``text == reasoning[start:end]`` with no surrounding whitespace.
    Never raises: empty, whitespace-only or non-string input gives ``[]``.
    """
    if splitter != "medrl":
        if splitter not in SPLITTERS:
            raise ValueError(f"splitter must be one of {', '.join(SPLITTERS)}, got {splitter!r}")
        return released_split_steps(reasoning)
    if not isinstance(reasoning, str):
        return []
    steps: list[Step] = []
    for line_m in _LINE.finditer(reasoning):
        line, base = line_m.group(0), line_m.start()
        pos = 0
        while pos < len(line):
            # skip whitespace and list markers at the start of the step
            while True:
                stripped = len(line) - len(line[pos:].lstrip())
                pos = max(pos, stripped)
                mk = _MARKER.match(line, pos)
                if mk is None or mk.end() == pos:
                    break
                pos = mk.end()
            if pos >= len(line):
                break
            end = len(line)
            for m in _END.finditer(line, pos):
                if _is_sentence_end(line, m):
                    end = m.end()
                    break
            seg = line[pos:end]
            a = pos + (len(seg) - len(seg.lstrip()))
            b = end - (len(seg) - len(seg.rstrip()))
            if b > a and any(ch.isalnum() for ch in line[a:b]):
                steps.append(Step(reasoning[base + a : base + b], base + a, base + b))
            pos = end
    return steps


def completion_steps(text: str, splitter: str = "medrl") -> list[Step]:
    """Steps of the ``<think>`` reasoning of a completion, with spans into the *full* text
    (``splitter``: :data:`SPLITTERS`, see :func:`split_steps`).

    ``text[step.start:step.end] == step.text`` for every step; ``[]`` when the completion has no
    ``<think>...</think>`` block (or is not a string). Never raises on its text.
    """
    parsed = parse_response(text)
    if parsed.reasoning is None or parsed.reasoning_span is None:
        return []
    off = parsed.reasoning_span[0]
    return [Step(s.text, s.start + off, s.end + off) for s in split_steps(parsed.reasoning, splitter)]


def _as_pairs(offsets) -> list[tuple[int, int]]:
    if hasattr(offsets, "tolist"):  # torch tensor / numpy array
        offsets = offsets.tolist()
    try:
        pairs = [(int(a), int(b)) for a, b in offsets]
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "step_token_spans: offsets must be a sequence of (char_start, char_end) pairs, "
            f"as from a fast tokenizer with return_offsets_mapping=True ({exc})"
        ) from None
    return pairs


def step_token_spans(text: str, steps: list[Step], offsets) -> list[tuple[int, int]]:
    """Token index spans ``[start, end)`` of each step, from a tokenizer's offset mapping.

    ``offsets[t] = (char_start, char_end)`` of token ``t`` in ``text`` (a HF fast tokenizer with
    ``return_offsets_mapping=True``; a tensor or array of shape (T, 2) also works). A token
    belongs to a step when its character range overlaps the step's span, so a step that
    starts or ends inside a token (byte-level BPE merges "Ġ" spaces and punctuation) includes
    that token. A token overlapping two steps goes to the **earlier** step; the later step
    starts after it, so spans never overlap and are ordered: ``0 <= s_1 <= e_1 <= s_2 <= ...
    <= num_tokens``. Tokens with an empty range (special tokens, ``(0, 0)``) belong to no step.
    A step that gets no token has the empty span ``(s, s)``, with ``s`` the first token ending
    after the step's start (``num_tokens`` if none), kept no earlier than the previous span's end.

    Raises ValueError when ``steps`` do not index ``text`` (``text[start:end] != step.text``),
    are out of order or overlap, or ``offsets`` is malformed.
    """
    from bisect import bisect_right

    if not isinstance(text, str):
        raise ValueError(f"step_token_spans: text must be a str, got {type(text).__name__}")
    pairs = _as_pairs(offsets)
    prev_end = 0
    for k, st in enumerate(steps):
        if not isinstance(st, Step):
            raise ValueError(f"step_token_spans: step {k} is {type(st).__name__}, not a Step")
        if not (0 <= st.start <= st.end <= len(text)) or text[st.start : st.end] != st.text:
            raise ValueError(
                f"step_token_spans: step {k} ({st.start}, {st.end}) {st.text[:40]!r} does not "
                "index this text; build steps with completion_steps(text) on the same text"
            )
        if st.start < prev_end:
            raise ValueError(f"step_token_spans: step {k} starts before step {k - 1} ends")
        prev_end = st.end

    k_steps = len(steps)
    starts = [s.start for s in steps]
    ends = [s.end for s in steps]
    first = [-1] * k_steps
    last = [-1] * k_steps
    for t, (cs, ce) in enumerate(pairs):
        if ce <= cs:
            continue
        j = bisect_right(ends, cs)  # earliest step ending after the token starts
        while j < k_steps and ends[j] <= starts[j]:  # empty step: covers nothing
            j += 1
        if j < k_steps and starts[j] < ce:
            if first[j] < 0:
                first[j] = t
            last[j] = t
    spans: list[tuple[int, int]] = []
    prev = 0
    n = len(pairs)
    for j in range(k_steps):
        if first[j] >= 0:
            s, e = max(first[j], prev), max(last[j] + 1, prev)
        else:
            s = next((t for t, (cs, ce) in enumerate(pairs) if ce > cs and ce > starts[j]), n)
            s = e = max(s, prev)
        spans.append((s, e))
        prev = e
    return spans


def prediction_text(output: str) -> str:
    """The part of an output the judge may see (MediX-R1 Sec. 3: chains of thought stripped).

    The ``<answer>`` block if present; else the text after the last ``</think>`` (or Qwen3's
    ``</thinking>``); else the whole output. A completion with no one answer
    (:func:`answer_problem`) gives its whole output, tags included, which every grader refuses
    with that reason (:func:`medrl.answers.decide` reads the tags). Always stripped; "" when over
    the answer cap (:func:`cap_answer`).
    """
    parsed = parse_response(output or "")
    if parsed.answer is not None:
        return parsed.answer.strip()
    if parsed.answer_problem is not None:
        return cap_answer((output or "").strip()) or ""
    tail = re.split(r"<\s*/\s*think(?:ing)?\s*>", output or "", flags=re.IGNORECASE)
    return cap_answer(tail[-1].strip()) or ""  # over the answer cap: nothing to judge


# ---------------------------------------------------------------- token offsets of a completion
def completion_token_offsets(tokenizer, text: str, ids: Sequence[int]) -> list[tuple[int, int]]:
    """Character offsets ``(start, end)`` into ``text`` of each generated token id.

    ``text`` is ``tokenizer.decode(ids, skip_special_tokens=True)`` (what TRL hands to reward
    functions); the result has exactly ``len(ids)`` entries. Exact path: re-tokenising ``text`` with
    ``return_offsets_mapping`` reproduces ``ids`` (trailing special tokens such as EOS, which
    decoding drops, get an empty offset at the end of the text). Otherwise (a non-canonical
    tokenisation was sampled, or special tokens sit mid-text): :func:`prefix_decode_offsets`.
    """
    ids = [int(t) for t in ids]
    n = len(ids)
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        re_ids, offs = list(enc["input_ids"]), enc["offset_mapping"]
        m = len(re_ids)
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        if m <= n and re_ids == ids[:m] and all(t in special for t in ids[m:]):
            end = len(text)
            return [(int(a), int(b)) for a, b in offs] + [(end, end)] * (n - m)
    return prefix_decode_offsets(tokenizer, ids)


def prefix_decode_offsets(tokenizer, ids: Sequence[int]) -> list[tuple[int, int]]:
    """Offsets by decoding ``ids[:t+1]`` for every t (O(T^2) decoding; the fallback path).

    Token t covers the characters its prefix adds; ends are kept non-decreasing (a partial
    multi-byte character may decode to a replacement char that the next token resolves).
    """
    out, prev = [], 0
    for t in range(len(ids)):
        cur = len(tokenizer.decode(list(ids[: t + 1]), skip_special_tokens=True))
        cur = max(cur, prev)
        out.append((prev, cur))
        prev = cur
    return out
