"""Response parsing: modality tag, ``<think>`` reasoning, ``<answer>`` answer, format check.

The rollout format shared by the papers (MediX-R1 003_d5d6a0d73a50ab79.txt Sec. 2.2; ARMed
001_46ab1c0cc2c66f17.txt Eq. 1; MRPO 000_20b05565d28598f4.txt App. C.1) is::

    [<MODALITY_TAG>] <think> reasoning </think> <answer> answer </answer>

Parsing is tolerant of tag case and stray whitespace inside the brackets (``< THINK >``) and
never raises on arbitrary text.
"""

from __future__ import annotations

import re

from medrl.types import ParsedResponse

_TAG = {
    name: (
        re.compile(rf"<\s*{name}\s*>", re.IGNORECASE),
        re.compile(rf"<\s*/\s*{name}\s*>", re.IGNORECASE),
    )
    for name in ("think", "answer")
}
_ANY_TAG = re.compile(r"<\s*/?\s*(?:think|answer)\s*>", re.IGNORECASE)


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
    may contain another think/answer tag. Project choice: the papers' regex
    ``<think>.*?</think>\\s*<answer>.*?</answer>`` with ``fullmatch`` would also accept a second
    answer block hidden inside the first, which we reject.
    """
    if not isinstance(text, str):
        return False
    think = _block(text, "think")
    if think is None:
        return False
    o_start, t_in, t_out, t_end = think
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


def parse_response(text: str) -> ParsedResponse:
    """Split a completion into modality tag, reasoning, answer and the format flag.

    - ``modality``: the stripped text before the first ``<think>`` (None if there is no
      ``<think>`` or nothing precedes it);
    - ``reasoning``: inside the first ``<think>...</think>`` (None if the block is missing);
    - ``answer``: inside the first ``<answer>...</answer>`` after the reasoning block, or anywhere
      if there is no reasoning block (None if missing);
    - ``well_formed``: :func:`is_well_formed`.

    Never raises; non-string input parses as an empty, malformed response.
    """
    if not isinstance(text, str):
        return ParsedResponse(None, None, None, False)
    think = _block(text, "think")
    modality = reasoning = answer = None
    r_span = a_span = None
    search_from = 0
    open_think = _TAG["think"][0].search(text)
    if open_think:
        before = text[: open_think.start()].strip()
        modality = before or None
    if think is not None:
        _, a, b, end = think
        r_span = _stripped_span(text, a, b)
        reasoning = text[r_span[0] : r_span[1]]
        search_from = end
    ans = _block(text, "answer", search_from)
    if ans is not None:
        _, a, b, _ = ans
        a_span = _stripped_span(text, a, b)
        answer = text[a_span[0] : a_span[1]]
    return ParsedResponse(
        modality=modality,
        reasoning=reasoning,
        answer=answer,
        well_formed=is_well_formed(text),
        reasoning_span=r_span,
        answer_span=a_span,
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
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content if isinstance(content, str) else ""
    return ""
