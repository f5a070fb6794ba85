"""The listed rewrites of an answer: the only changes that make two wordings one answer.

Default-deny: an answer is compared with its reference after these rewrites and no others, and
an answer that needed one is correct by structure (``SAME_STRUCTURE``), never by identity. Each
rewrite removes words that carry no claim of their own:

- *sentence frames* around the answer: a context lead-in ("Based on the image, X", "Looking at
  this CT: X"), a label ("Answer: X", "The answer is X", "Final answer = X", "Impression: X",
  "IMP: X", "Dx - X", "Answer -> X", "Findings: X"), a list marker before the one item ("1. X",
  "• X", "> X"), a subject ("The organ shown is X", "It is X", "This is X",
  "The image shows X"), a connective ("So, X", "Therefore X", "In conclusion, X"), a closing
  label ("X is the answer", "X (final answer)"), where it is seen ("X, as shown in this image"),
  and the question restated before the answer ("Which organ is enlarged? Liver");
- *emphasis* that only strengthens the claim: a certainty word before or after it ("Clearly X",
  "X, definitely", "definite X", "confirmed X", "no doubt X", "X (confirmed)", "X, no question",
  "X, beyond doubt", "X for certain", "X is confirmed") and exclamation marks at its end ("X!",
  "X!!") - a hedge ("probably X") is never emphasis, it is refused by the guard, and neither is
  a doubt ("X (unconfirmed)", "no definite X", "X, not certain": the words stay and are read);
- *reported speech* that only says where the answer is written: "As the report states, X", "The
  report says X", "According to the radiologist, X", "Per the report: X" (never a doubt or a
  denial: "The report questions X", "The report does not mention X" stay as written);
- *a double negation*, read as the affirmation it makes: "not absent", "not missing", "not
  lacking" are "present", "not negative" is "positive", "no absence of X" and "not without X"
  are "X" and "with X" ("not excluded" and "not ruled out" are hedges, never rewritten);
- *count words* around a count, only when the reference is a count: "exactly 2", "only two", "a
  total of 2", "just 2", "2 in total", "2 altogether", "a single one" (a bound - "at least 2",
  "about 2", "2 or more" - stays and is read);
- *a type word* after the answer that agrees with a colour / shape / plane reference ("Black in
  color", "Axial slice");
- *slash shorthand*: "w/" and "w/o" are "with" and "without" (never a list separator).

A frame the reference itself is written in is never removed from the answer (a reference
"Impression" keeps the answer "Impression"). The patterns are anchored and linear in the answer.
"""

from __future__ import annotations

import re

_RS = re.IGNORECASE | re.DOTALL
_REST = r"\s*(?P<x>\S.*)$"
_MEDIUM = (r"(?:image|images|scan|scans|picture|film|radiograph|study|studies|findings?|exam|examination|"
           r"ct(?:\s+scan)?|mri(?:\s+scan)?|mr|x-?ray|radiography|ultrasound|sonogram|slice)")
#: words that strengthen a claim without changing it (a closed list; hedges are never here)
EMPHASIS = ("clearly", "definitely", "definitively", "certainly", "obviously", "undoubtedly", "surely",
            "absolutely", "indeed", "unequivocally", "unmistakably")
_EMPHASIS = "(?:" + "|".join(EMPHASIS) + r"|for\s+sure|without\s+(?:a\s+|any\s+)?doubt|no\s+doubt|beyond\s+(?:a\s+|any\s+)?doubt"\
    r"|without\s+(?:a\s+|any\s+)?question|no\s+question|for\s+certain)"
#: certainty adjectives before the answer ("definite X", "confirmed X") or after it ("X (confirmed)", "X,
#: certain"): the claim made certain ("certain" only after it: "certain lesions" are some lesions)
CERTAIN = ("definite", "definitive", "confirmed", "unequivocal", "undoubted", "unmistakable", "certain")
_REPORTER = r"(?:the\s+)?(?:radiology\s+|radiologist'?s\s+|final\s+|official\s+)?(?:report|radiologist|reading|read)"
_REPORT_VERB = r"(?:states|stated|says|said|notes|noted|describes|described|reports|reported|confirms|confirmed|" \
               r"indicates|indicated|documents|documented|reads|shows|mentions|identifies|identified)"

# a list marker before the one item: "1. X", "(a) X", "• X", "- X", "> X", "# X"
_LIST_MARKER = re.compile(r"^(?:\(?\d{1,2}[.)]|\(?[a-h][.)]|[-*\u2022\u25cf\u25aa>#]+)\s+(?P<x>\S.*)$", _RS)
#: frames at the start of an answer, in the order they are tried
LEADING = (
    # context lead-ins: "Based on the image, X", "Looking at this CT: X"
    re.compile(r"^(?:based\s+on|according\s+to|judging\s+(?:by|from)|looking\s+at|from|on|in|upon\s+review\s+of|"
               r"after\s+reviewing|reviewing)\s+(?:the|this|these|that)\s+(?:provided\s+|given\s+|medical\s+|"
               r"radiological\s+)?" + _MEDIUM + r"\b\s*[,:]?" + _REST, _RS),
    # labels: "Answer: X", "The answer is X", "Final answer = X", "IMP: X", "Dx - X"
    re.compile(r"^(?:the\s+|my\s+|our\s+)?(?:final\s+|correct\s+|best\s+)?(?:answer|ans|impression|imp|findings?|"
               r"diagnosis|dx|conclusion|result|response|reply|interpretation)\b\s*(?:is\s*:?|:|=>?|-+>?|\u2013|\u2014|"
               r"\u2192)" + _REST, _RS),
    _LIST_MARKER,
    # subjects: "The organ shown is X", "The abnormality seen is: X"
    re.compile(r"^(?:the\s+)?(?:organ|structure|finding|abnormality|modality|imaging\s+modality|plane|image\s+plane|"
               r"location|lesion|color|colour|shape|size|number|count|side|level|view|sequence|part|region|"
               r"organ\s+shown|organ\s+system|body\s+part)\s+(?:shown\s+|seen\s+|visible\s+|here\s+)?"
               r"(?:is|are)\s*:?\s+(?P<x>\S.*)$", _RS),
    # "It is X", "This is X", "It's X"
    re.compile(r"^(?:it|this|that)\s*(?:\s+is|'s)\s+(?P<x>\S.*)$", _RS),
    # "The image shows X", "This scan demonstrates X"
    re.compile(r"^(?:(?:the|this)\s+)?" + _MEDIUM + r"\s+(?:shows|demonstrates|reveals|depicts|displays)" + _REST, _RS),
    # connectives: "So, X", "Therefore X", "In conclusion, X"
    re.compile(r"^(?:so|thus|therefore|hence|overall|finally|in\s+summary|in\s+conclusion|in\s+short|to\s+summari[sz]e)"
               r"\b\s*[,:]?" + _REST, _RS),
    # emphasis: "Clearly X", "Definitely: X", "No doubt X"
    re.compile(r"^" + _EMPHASIS + r"\b\s*[,:]?" + _REST, _RS),
    # certainty adjectives: "definite X", "confirmed X"
    re.compile(r"^(?:" + "|".join(CERTAIN[:-1]) + r")\s+(?P<x>\S.*)$", _RS),
    # reported speech: "As the report states, X", "According to the radiologist, X", "Per the report: X"
    re.compile(r"^(?:as\s+" + _REPORTER + r"\s+" + _REPORT_VERB + r"|according\s+to\s+" + _REPORTER + r"|per\s+"
               + _REPORTER + r"|as\s+reported(?:\s+by\s+" + _REPORTER + r")?|" + _REPORTER + r"\s+" + _REPORT_VERB
               + r"(?:\s+that)?)\s*[,:]?" + _REST, _RS),
)
#: frames at the end of an answer
TRAILING = (
    re.compile(r"^(?P<x>.*?\S)\s*,?\s+" + _EMPHASIS + r"$", _RS),
    # certainty after the answer: "X (confirmed)", "X - definite", "X, confirmed", "X is confirmed"
    re.compile(r"^(?P<x>.*?\S)\s*(?:\(\s*(?:" + "|".join(CERTAIN) + r")\s*\)|(?:,|-+|\u2013|\u2014)\s*(?:"
               + "|".join(CERTAIN) + r")|\s(?:is|are)\s+(?:confirmed|certain|definite))$", _RS),
    # where it is seen: "X, as shown in this image", "X on the scan"
    re.compile(r"^(?P<x>.*?\S)\s*,?\s+(?:as\s+)?(?:(?:is\s+|are\s+)?(?:seen|shown|visible|noted|demonstrated|depicted|"
               r"evident)\s+)?(?:in|on)\s+(?:the|this)\s+(?:provided\s+|given\s+)?" + _MEDIUM + r"$", _RS),
    re.compile(r"^(?P<x>.*?\S)\s+is\s+(?:the|my)\s+(?:final\s+|correct\s+)?answer$", _RS),
    re.compile(r"^(?P<x>.*?\S)\s*\(\s*(?:final\s+)?answer\s*\)$", _RS),
    # a type word that agrees with a colour / shape / plane reference
    re.compile(r"^(?P<x>.*?\S)\s*,?\s+(?:in\s+colou?r|colou?red|in\s+shape|shaped|in\s+appearance|slice|section|cut|"
               r"image)$", _RS),
)
_EXCLAIM = re.compile(r"!+$")
#: characters at the end of an answer a closing frame is looked for in
_TAIL = 200
#: a double negation and the affirmation it makes (never "not excluded" / "not ruled out": hedges)
_DOUBLE_NEGATION = ((re.compile(r"\bnot\s+(?:absent|missing|lacking)\b", re.I), "present"),
                    (re.compile(r"\bnot\s+negative\b", re.I), "positive"),
                    (re.compile(r"\b(?:there\s+is\s+)?no\s+(?:absence|lack)\s+of\s+", re.I), ""),
                    (re.compile(r"\bnot\s+without\s+", re.I), "with "))
_COUNT_REFERENCE = re.compile(r"^\s*(?:\d{1,3}|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
                              r"\s*\.?\s*$", re.I)
_COUNT_LEADING = re.compile(r"^(?:exactly|only|just|precisely|a\s+total\s+of|in\s+total\s*,?|total\s*[:=-]?|"
                            r"in\s+all\s*,?|a\s+count\s+of|count\s*[:=-])\s*" + _REST, _RS)
_COUNT_TRAILING = re.compile(r"^(?P<x>.*?\S)\s*,?\s+(?:in\s+total|altogether|in\s+all|total|only|exactly)$", _RS)
_SINGLE = re.compile(r"^(?:just\s+|only\s+)?(?:a\s+single|one\s+single)(?:\s+one)?\b", re.I)
_WITHOUT = re.compile(r"(?<![\w/])w/o(?![\w/])\s*", re.IGNORECASE)
_WITH = re.compile(r"(?<![\w/])w/(?![\w/])\s*", re.IGNORECASE)
_ENDS = " \t\r\n."


def shorthand(text: str) -> str:
    """Radiologists' slash shorthand: "w/" -> "with", "w/o" -> "without" (never a list separator)."""
    return _WITHOUT.sub("without ", _WITH.sub("with ", text))


def double_negation(text: str, reference: str = "") -> str:
    """A double negation read as the affirmation it makes ("X: not absent" -> "X: present", "no
    absence of X" -> "X", "not without X" -> "with X"), unless the reference is written so."""
    for pat, new in _DOUBLE_NEGATION:
        if pat.search(text) and not pat.search(reference):
            text = pat.sub(new, text)
    return text


def _strip_count_words(text: str) -> str:
    """Count words around a count ("exactly 2", "a total of 2", "2 altogether", "a single one")."""
    m = _SINGLE.match(text)
    if m:
        return "1" + text[m.end():]
    for pat in (_COUNT_LEADING, _COUNT_TRAILING):
        m = pat.match(text)
        if m:
            return _core(m.group("x"))
    return text


def _core(text: str) -> str:
    return text.strip(_ENDS)


_PUNCT = re.compile(r"[^\w\s]+")


def _key(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", text.casefold()).split())


def _strip_question(text: str, question: str | None) -> str:
    """The answer without the question restated before it ("Which organ is enlarged? Liver",
    "Q: Which organ is enlarged? A: Liver")."""
    if not question or not question.strip():
        return text
    m = re.match(r"^\s*(?:q(?:uestion)?\s*[:.-]\s*)?", text, re.IGNORECASE)
    body, q = text[m.end():], _key(question)
    end = body.find("?")
    if end < 0 or _key(body[:end]) != q:
        return text
    rest = re.sub(r"^\s*(?:a(?:nswer)?\s*[:.-]\s*)?", "", body[end + 1:], flags=re.IGNORECASE)
    return _core(rest) or text


_MARKERS = re.compile(r"(?:^|\s)(?:\(?\d{1,2}[.)]|\(?[a-h][.)]|[-*\u2022\u25cf\u25aa])\s+")


def _strip_once(text: str, reference: str) -> str:
    for pat in LEADING:
        m = pat.match(text)
        if m and not pat.match(reference):
            if pat is _LIST_MARKER and len(_MARKERS.findall(text)) > 1:
                continue  # "1. X 2. Y": a list, not one item after a marker
            return _core(m.group("x"))
    head, tail = (text[:-_TAIL], text[-_TAIL:]) if len(text) > 2 * _TAIL else ("", text)
    for pat in TRAILING:  # a closing frame is short: looked for in the answer's tail (linear, small constant)
        m = pat.match(tail)
        if m and not pat.match(reference):
            return _core(head + m.group("x"))
    if _EXCLAIM.search(text) and not _EXCLAIM.search(reference):
        return _core(_EXCLAIM.sub("", text.rstrip()))
    return text


def strip_frames(answer: str, reference: str, *, question: str | None = None, passes: int = 6) -> str:
    """``answer`` without the listed frames and emphasis (see the module docstring) and without
    ``question`` restated before it, with surrounding spaces and full stops removed; never a
    frame ``reference`` is written in."""
    text, ref = _strip_question(_core(answer), question), _core(reference)
    count = bool(_COUNT_REFERENCE.match(ref))
    for _ in range(passes):
        before = text
        text = _strip_once(text, ref)
        if count and text == before:
            text = _strip_count_words(text)
        if text == before or not text:
            break
    return text or _core(answer)
