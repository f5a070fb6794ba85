"""Step verification of the reference judge (MRPO Eq. 3 and App. H.2): for every reasoning step,
a gold-alignment bit and an answer-contribution bit, with a reason.

Rules, in the order :meth:`_StepContext.rate` applies them (a step failing one gets 0/0). The
same criteria are stated to an LLM judge in :func:`medrl.judges.prompts.verify_steps`.

About the step as a whole:

- Meta-commentary and empty steps get 0/0.
- Restatement (:func:`restatement`): a step framed as a conclusion or a question ("The answer is
  X", "Final answer: X", "So the diagnosis is X", "Therefore X.", "This is X", "What is the
  finding?") that adds no content word beyond the question and the reference answer restates
  them and is not reasoning: 0/0 "restates the answer". The one exception is the last step of a
  trace whose every earlier step is valid: it is the conclusion those steps reach (MRPO App. H.2,
  later steps "reach the diagnostic conclusion") and is judged as usual. Appending it to a trace
  can therefore never raise the trace's mean (MRPO Eq. 5 process term).
- Near-duplicates (:func:`repeats`): a step whose content words (after the lexicon, stems, typos)
  all occur in one earlier statement, or overlap one with Jaccard >= 0.7 with the same
  negation, "repeats an earlier step": only the first earns credit (MRPO App. H.2, "pure
  repetition of previous steps without new content"). The closing conclusion above is exempt:
  a conclusion re-uses the words of the findings it concludes from.
- Run-on steps (:func:`split_claims`): a step with more than ``MAX_CLAIMS`` claims (clauses with
  their own finite verb) or more than ``MAX_WORDS`` words gets 0/0. A step of several claims is
  judged as a whole, one verdict per parsed step (so MRPO's token spans, Eq. 7, stay aligned with
  :func:`medrl.answers.completion.split_steps`): 0/0 when any claim is wrong; gold-aligned only when every
  claim is supported; contributing when it or one of its claims contributes.

``step_prompt="paper"`` applies MRPO App. H.2's rules only, as :func:`medrl.judges.prompts.verify_steps`
states them to an LLM judge under that name: meta-commentary, empty and repeated steps get 0/0,
and every other step is judged as a whole by :meth:`_StepContext.judge` - no restatement rule (a
step naming the answer contributes, H.2; framed as a conclusion it is not tested as a repeat,
H.2's late steps "reach the diagnostic conclusion"), no run-on rule, no per-claim split, and a
bare noun phrase is judged on what it names (keyword stuffing, every option at once, stays
meaningless).

About what a statement says (:meth:`_StepContext.judge`, applied to the step and to each claim):

- It must be a statement: bare noun phrases and keyword strings, keyword stuffing (every value
  of a group at once) and evasions get 0/0.
- A statement contradicting the record (wrong modality, wrong laterality, an organ outside the
  reference's body region) or denying the reference answer gets 0/0.
- Gold alignment, with gold reasoning: some gold sentence shares at least half of the step's
  words (lexicon, stems) - and a finding word, not only a place - or has MiniLM cosine >= 0.72,
  with the same negation of the shared findings and no clash of side, sub-location, level or
  qualifier; a step that only contradicts gold sentences gets 0/0. Without gold reasoning: the
  step names the record's modality, organ/region, laterality or answer.
- Answer contribution: the step names at least half of the reference answer's words, does not
  negate them, and has no clashing qualifier or confusable term - or it is gold-aligned and
  asserts an abnormal finding (not only a place, the setting or "normal"), a finding on the way
  to the answer (App. H.2); for a yes/no reference, the step is about the question's subject with
  the answer's polarity.
"""

from __future__ import annotations

import re
from typing import Sequence

from medrl.answers.guard import is_yes_no, yes_no
from medrl.answers.clinical.lexicon import all_tokens, canonical_text, content_tokens
from medrl.answers.clinical.mismatch import _GROUPS as _MISMATCH_GROUPS
from medrl.answers.clinical.mismatch import group_values, levels
from medrl.answers.clinical.negation import negated_tokens
from medrl.judges.prompts import STEP_MAX_CLAIMS, STEP_MAX_WORDS
from medrl.judges.reference.words import (
    _EVASION, _LOCATION_REGION, _META, _MODALITY_WORDS, _ORGANS, _aligned, _regions_of, _same_word, _sentences,
    canon_tokens,
)
from medrl.common.modality import modality_to_tag
from medrl.types import StepVerdict

# ------------------------------------------------------------------ is it a statement?
_STATEMENT = re.compile(
    r"\b(?:is|are|was|were|be|been|being|am|isn't|aren't|wasn't|weren't|has|have|had|hasn't|haven't|does|do|did|"
    r"doesn't|don't|can|cannot|can't|could|may|might|must|shall|should|will|would|there's|it's|"
    r"shows?|showed|shown|showing|demonstrat\w*|reveal\w*|suggest\w*|indicat\w*|appear\w*|measur\w*|"
    r"contain\w*|lies|lie|lying|extend\w*|involv\w*|compress\w*|displac\w*|caus\w*|confirm\w*|support\w*|"
    r"exclud\w*|point\w*|correspond\w*|represent\w*|means|lacks?|occup\w*|obscur\w*|surround\w*|abuts?|"
    r"cross\w*|fills?|filled|enhanc\w*|see|sees|seen|notes?|noted|identif\w*|visuali[sz]\w*|"
    r"locat\w*|consists?|compar\w*|differs?|match\w*|fits?|rules?|ruled|favou?rs?|makes?|helps?|becomes?|"
    r"remains?|looks?|reflects?|presents?|occurs?|arises?|affects?|spares?|exhibits?|displays?|depicts?|"
    r"implies|imply|leads?|results?|narrows?|widens?|projects?|overlies|overlie|marks?|conclude\w*|"
    r"sits?|sitting|blunt(?:s|ed|ing)?|obliterat\w*|efface\w*|encas\w*|invad\w*|spread\w*|elevat\w*|deviat\w*|shift\w*|thicken\w*|bulg\w*|protrud\w*|"
    r"answer(?:s|ed)?|thus|therefore|hence|so|because|since|which|that)\b",
    re.IGNORECASE,
)
_META2 = re.compile(
    r"^\s*(?:(?:step\s*\d+\s*[:.)-]?\s*)?(?:analy[sz]e|examine|look(?:ing)? at|review|assess|evaluate|observe|"
    r"identify|determine|check|inspect|think(?:ing)? about|recall)\b(?![^.]*\b(?:is|are|shows?|reveals?)\b))"
    r"|^\s*(?:this|the)\s+(?:step|question|task|problem)\s+(?:is|requires|involves|asks)\b"
    r"|^\s*(?:as\s+(?:mentioned|stated|noted|said)\s+(?:above|before|earlier))\s*[,.]?\s*$"
    r"|\b(?:i am|i'm)\s+(?:not\s+)?(?:sure|confident|certain)\b"
    r"|\bin\s+(?:this|my)\s+(?:analysis|reasoning|response)\b",
    re.IGNORECASE,
)

# "X obscures the ...", "X narrowed a ...": a verb-like word (-s/-ed) right before a determiner
_VERB_BEFORE_DETERMINER = re.compile(r"\b[a-z]{3,}(?:s|ed)\s+(?:the|a|an|both|its|their|all|most|much|this|that)\b",
                                     re.IGNORECASE)


_LEADING_AND = re.compile(r"^\s*(?:(?:and|or|but|with|plus)\s+)+", re.IGNORECASE)


def _keyword_string(step: str) -> bool:
    """A bare noun phrase or keyword list rather than a statement: no verb (from the statement
    list, or a -s/-ed word before a determiner), or mostly one- or two-word fragments
    ("Chest. Lungs. Opacity. Left.", "MRI, brain, and hyperintensity, and the cortex is swollen";
    a joining "and"/"or"/"with" does not lengthen a fragment)."""
    frags = [_LEADING_AND.sub("", f) for f in re.split(r"[.;,:\n]+", step) if f.strip()]
    if len(frags) >= 3 and sum(len(f.split()) <= 2 for f in frags) / len(frags) >= 0.6:
        return True
    return not (_STATEMENT.search(step) or _VERB_BEFORE_DETERMINER.search(step))

def _stuffed(step: str) -> bool:
    """Keyword stuffing: three or more values of one exclusive group (modalities, sides, planes, organs
    in a comma list) named in one step."""
    groups = group_values(set(all_tokens(step)))
    if any(len(v) >= 3 for k, v in groups.items() if k != "organ"):
        return True
    if sum(len(v) >= 2 for k, v in groups.items() if k not in ("organ", "side")) >= 2:
        return True  # "left, right, upper, lower, anterior, posterior": every option at once
    return len(groups.get("organ", ())) >= 4 and step.count(",") >= 3


# ------------------------------------------------------------------ places, settings and findings
_ALL_GROUPS = set(_MISMATCH_GROUPS) | {"vertebral level", "rib", "ventricle", "grade"}
# words that place or qualify a finding (sides, positions, organs): a NegEx scope that reaches them
# ("lung markings are absent in the left upper zone") does not deny them
_PLACE_GROUPS = ("side", "vertical position", "superior/inferior", "anterior/posterior", "medial/lateral",
                 "proximal/distal", "apex/base", "organ part", "colon segment", "brain lobe", "organ", "plane", "view",
                 "modality")
_PLACE_WORDS = {alias for g in _PLACE_GROUPS for alias in _MISMATCH_GROUPS[g][1]} | {
    "normal", "abnormal", "present", "absent", "lung", "marking", "chest", "zone", "part", "wall", "lobe"}
# the place words proper (no "normal"/"abnormal"/"present"/"absent"): not a finding on their own
_LOCATION_WORDS = _PLACE_WORDS - {"normal", "abnormal", "present", "absent"}
_SETUP_WORDS = {"window", "slice", "section", "weighted", "contrast", "noncontrast", "phase", "level", "displayed",
                "sequence", "series", "flair", "film", "projection", "cut", "through", "shown"}


def _abnormal_finding(terms: set[str], negated: set[str]) -> bool:
    """The step asserts an abnormal finding: a word that is not a place, a setting (modality, plane,
    window, sequence) or "normal", and is not negated (MRPO App. H.2: a finding needed to reach the
    answer contributes; naming the setting or normal structures does not)."""
    if "normal" in terms:
        return False
    return bool(terms - _LOCATION_WORDS - _SETUP_WORDS - negated - {"abnormal", "present", "absent"})


def _disjoint_groups(a: str, b: str, groups: set[str]) -> str | None:
    """A group (side, level, ...) that both texts name with no value in common."""
    ga, gb = group_values(set(all_tokens(a))), group_values(set(all_tokens(b)))
    for name in groups:
        if name in ga and name in gb and not (ga[name] & gb[name]):
            return name
    la, lb = levels(a), levels(b)
    for name in ("vertebral level", "rib", "ventricle", "grade"):
        if name in groups and la[name] and lb[name] and not (la[name] & lb[name]):
            return name
    return None


# ------------------------------------------------------------------ claims, restatements, repetition
#: A step carrying more claims than this, or longer than this many words (a normal sentence has
#: 10-25), is a run-on: one sentence doing the work of several steps. The LLM judge's prompt states
#: the same limits (:data:`medrl.judges.prompts.STEP_MAX_CLAIMS`).
MAX_CLAIMS = STEP_MAX_CLAIMS
MAX_WORDS = STEP_MAX_WORDS

# A finite verb: the mark of a clause with its own assertion ("the liver is enlarged", "it shows").
# Adjectival participles ("enlarged", "blunted", "thickened") are left out on purpose: "hyperintense
# and swollen" or "opacity and blunted angles" qualify one finding, they do not add a claim.
_FINITE = re.compile(
    r"\b(?:is|are|was|were|am|isn't|aren't|wasn't|weren't|has|have|had|hasn't|haven't|hadn't|does|do|did|"
    r"doesn't|don't|didn't|can|cannot|can't|could|may|might|must|shall|should|will|would|there's|it's|that's|"
    r"shows|showed|demonstrates|demonstrated|reveals|revealed|suggests|suggested|indicates|indicated|appears|"
    r"appeared|seems|seemed|measures|measured|contains|contained|lies|lay|sits|extends|extended|involves|"
    r"compresses|displaces|causes|caused|confirms|confirmed|supports|excludes|points|corresponds|represents|"
    r"means|lacks|occupies|obscures|surrounds|abuts|crosses|fills|enhances|remains|remained|looks|reflects|"
    r"occurs|arises|affects|spares|exhibits|displays|depicts|implies|leads|results|narrows|widens|projects|"
    r"overlies|blunts|obliterates|effaces|encases|invades|spreads|elevates|deviates|shifts|thickens|bulges|"
    r"protrudes|makes|becomes|favours|favors|rules|matches|fits|differs|consists|presents|"
    # the same verbs after a plural subject ("the kidneys enhance", "both lungs show")
    r"show|demonstrate|reveal|suggest|indicate|appear|seem|measure|contain|lie|sit|extend|involve|compress|"
    r"displace|cause|confirm|represent|occupy|obscure|surround|abut|cross|fill|enhance|remain|reflect|arise|"
    r"look)\b",
    re.IGNORECASE,
)
# Where one claim may end and the next begin: a semicolon, a coordinating or concluding
# connective, or a bare comma (a comma splice). A piece becomes its own claim only when it has a
# finite verb; otherwise it stays with the claim before it ("..., with opacity at the base").
_CLAIM_BREAK = re.compile(
    r"\s*;\s*|\s*,\s*(?:(?:and|but|so|while|whereas|thus|hence|therefore|then|yet|and\s+so)\s+)?"
    r"|\s+(?:and|but|so|while|whereas|then|yet|and\s+so)\s+",
    re.IGNORECASE,
)


def split_claims(step: str) -> list[str]:
    """The claims of one step: clauses with their own finite verb, split at semicolons, commas and
    connectives ("and", "but", "so", "while", "therefore", ...). A piece without a finite verb is
    part of the claim before it, so "hyperintense and swollen" or "blunted, with opacity at the
    base" stays one claim; "the liver is enlarged, the spleen is normal and the kidneys enhance"
    is three."""
    text = (step or "").strip()
    pieces, pos = [], 0
    for m in _CLAIM_BREAK.finditer(text):
        pieces.append(text[pos:m.start()])
        pos = m.end()
    pieces.append(text[pos:])
    claims: list[str] = []
    for piece in (p.strip(" ,;") for p in pieces):
        if not piece:
            continue
        if claims and not _FINITE.search(piece):
            claims[-1] = f"{claims[-1]}, {piece}"
        elif claims and not _FINITE.search(claims[-1]):
            claims[-1] = f"{claims[-1]}, {piece}"  # a leading fragment belongs to the first clause
        else:
            claims.append(piece)
    return claims or ([text] if text else [])


# A conclusion frame: a step that announces the answer rather than observing or inferring
# ("The answer is X", "Final answer: X", "So the diagnosis is X", "Therefore X.", "This is X",
# "These findings are consistent with X"). Such a step is a restatement when nothing but the
# answer, the reference or the question's words is left after the frame.
_CONNECTIVE = re.compile(
    r"^(?:\s*(?:so|thus|hence|therefore|consequently|accordingly|overall|finally|altogether|in\s+conclusion|"
    r"in\s+summary|in\s+short|to\s+conclude|to\s+summari[sz]e|in\s+the\s+end|all\s+in\s+all)\b[\s,:;-]*)+",
    re.IGNORECASE,
)
_ANSWER_FRAME = re.compile(
    r"^\s*(?:the\s+|my\s+|our\s+|a\s+)?(?:(?:final|correct|right|best|most\s+likely|likely|probable|definitive|"
    r"overall|main|primary|key|leading)\s+)*(?:answer|diagnosis|diagnoses|impression|conclusion|finding|findings|"
    r"pathology|abnormality|abnormalities|disease|condition|option|choice|result|answer\s+choice)\b"
    r"(?:\s+(?:shown|seen|here|present|depicted|visible|demonstrated|in\s+(?:this|the)\s+(?:image|scan|case|study)))?"
    r"\s*(?:is|are|would\s+be|will\s+be|must\s+be|=|:|-)"
    r"|^\s*(?:this|that|it|these|those|these\s+(?:findings|features)|the\s+(?:findings|features|appearance|image))\s+"
    r"(?:is|are|was|were|represents?|indicates?|suggests?|confirms?|means?|points?\s+to|favou?rs?)\b",
    re.IGNORECASE,
)
_QUESTION_FRAME = re.compile(r"\?\s*$|^\s*(?:we\s+are|i\s+am|i'm)\s+asked\b|^\s*the\s+question\b", re.IGNORECASE)
# words of the frame itself: they are not content the step adds
_FRAME_WORDS = {
    "answer", "final", "correct", "right_answer", "diagnosis", "impression", "conclusion", "finding", "pathology",
    "abnormal", "abnormality", "disease", "condition", "option", "choice", "result", "therefore", "thus", "hence",
    "most", "likely", "probable", "probably", "consistent", "compatible", "suggestive", "indicative", "diagnostic",
    "keeping", "located", "location", "locate", "shown", "seen", "present", "image", "scan", "case", "study", "yes",
    "no", "overall", "conclude", "finally", "feature", "appearance", "represent", "indicate", "suggest", "confirm",
    "mean", "point", "favor", "favour", "ask", "asked", "question", "best", "definitive", "main", "primary", "key",
    "leading", "clearly", "here", "visible", "depicted", "demonstrated", "consequently", "accordingly", "summary",
}

# discourse words: they point back at what was said, they say nothing new
_DISCOURSE = {"again", "once", "more", "also", "noted", "mentioned", "said", "stated", "previously", "before",
              "earlier", "above", "indeed", "still", "further", "repeat", "restate", "reiterate"}


def _covered(terms: set[str], *pools: set[str]) -> set[str]:
    """The terms matched (equal, same stem or a typo) by a word of any pool."""
    pool = set().union(*pools)
    return {t for t in terms if any(_same_word(t, u) for u in pool)}


def restatement(step: str, question: str, reference: str) -> str | None:
    """"restates the answer" / "restates the question" when the step only restates it, else None.

    A restatement is framed as a conclusion or a question ("The answer is X", "Final answer: X",
    "So the diagnosis is X", "Therefore X.", "This is X", "What is the finding?") and adds no
    content word beyond the frame, the reference answer and the question. An observation in its
    own words ("There is a mass in the left kidney") is not a restatement: it is judged as a
    finding (and, said a second time, as a repeat)."""
    text = (step or "").strip()
    body = _CONNECTIVE.sub("", text)
    framed_answer = bool(body != text or _ANSWER_FRAME.search(body) or re.match(r"^\s*answer\s*:", body, re.I))
    framed_question = bool(_QUESTION_FRAME.search(text))
    if not (framed_answer or framed_question):
        return None
    terms = set(content_tokens(text)) - _FRAME_WORDS - _DISCOURSE
    q_terms, r_terms = set(content_tokens(question)), set(content_tokens(reference)) | set(canon_tokens(reference))
    rest = terms - _covered(terms, q_terms, r_terms)
    if rest:
        return None
    if framed_question and not framed_answer:
        return "restates the question"
    return "restates the answer"


def repeats(terms: set[str], negated: set[str], seen: Sequence[tuple[set[str], set[str]]],
            threshold: float = 0.7) -> bool:
    """A near-duplicate of an earlier step: its content words (after the lexicon; equal, same stem
    or a typo) are all in one earlier step, or overlap one with Jaccard >= ``threshold`` - and the
    shared words have the same negation (saying the opposite is a contradiction, not a repeat).
    Discourse words ("again", "once more", "as noted above") are not content."""
    terms = terms - _DISCOURSE
    for prev, prev_neg in seen:
        prev = prev - _DISCOURSE
        if not prev:
            continue
        shared = _covered(terms, prev)
        if any((t in negated) != bool(_covered({t}, prev_neg)) for t in shared):
            continue
        back = _covered(prev, terms)
        jaccard = len(shared) / max(1, len(terms) + len(prev) - len(back))
        if shared == terms or jaccard >= threshold:
            return True
    return False


# ------------------------------------------------------------------ the rules, applied per record
_STEP_EMBED_THRESHOLD = 0.72
# reasons of a 0/0 for a step that asserts nothing: a later statement of its words is no repeat
_NOT_SAID = ("meta-commentary", "empty", "not a statement", "keyword stuffing")
# reasons of a 0/0 that find no support rather than a fault (the claim is unmatched, not wrong)
_UNMATCHED = ("no gold step matches", "no evidence named")


class _StepContext:
    """What the record says, analysed once per rollout, and the per-step rules (module docstring)."""

    def __init__(self, question: str, reference: str, gold: str | None, evidence: dict | None, *,
                 use_embeddings: bool = True, embedding_model: str | None = None, step_prompt: str = "hardened"):
        ev = dict(evidence or {})
        self.paper = step_prompt == "paper"  # MRPO App. H.2's rules only (module docstring)
        self.use_embeddings = use_embeddings
        self.embedding_model = embedding_model
        self.reference = reference or ""
        self.question_text = question or ""
        self.ref = canon_tokens(reference)
        self.ref_all = set(canon_tokens(reference, True))
        self.ref_terms = set(content_tokens(reference)) - {"yes", "no"}
        self.ref_negated = negated_tokens(reference)
        self.ref_polarity = yes_no(reference) if is_yes_no(reference) else None
        self.question = set(canon_tokens(question)) - {"yes", "no"}
        self.question_terms = set(content_tokens(question)) - {"yes", "no"}
        self.gold_sents = [g for g in _sentences(gold or "") if content_tokens(g)] if gold else []
        self.gold = set(canon_tokens(gold)) if gold else None
        self.gold_terms = [set(content_tokens(g)) for g in self.gold_sents]
        gold_all = set(canon_tokens(gold, True)) if gold else set()
        # expected modality: evidence, else the gold reasoning's modality words
        tag = modality_to_tag(ev.get("modality")) if ev.get("modality") else None
        if tag is None and ev.get("modality_tag"):
            tag = modality_to_tag(ev.get("modality_tag"))
        gold_mods = {_MODALITY_WORDS[t] for t in gold_all if t in _MODALITY_WORDS}
        self.modalities = {tag} if tag else gold_mods
        organ = str(ev.get("organ") or ev.get("location") or "").strip().lower()
        org_toks = set(canon_tokens(organ))
        self.regions = set(_LOCATION_REGION.get(organ, set())) | _regions_of(org_toks)
        self.regions |= _regions_of(gold_all) | _regions_of(self.ref_all)
        self.organ_tokens = (org_toks | (gold_all & _ORGANS) | (self.ref_all & _ORGANS)) - {"spine"}
        sides = {"left", "right"}
        ev_answer = set(canon_tokens(ev.get("answer"), True)) if ev.get("answer") else set()
        self.sides = (self.ref_all | ev_answer | gold_all | org_toks) & sides
        self._gold_emb = None

    def _gold_cosines(self, step: str) -> list[float]:
        if not self.gold_sents or not self.use_embeddings:
            return [0.0] * len(self.gold_sents)
        from medrl.common.embeddings import encode

        if self._gold_emb is None:
            self._gold_emb = encode([canonical_text(g) for g in self.gold_sents], self.embedding_model)
        e = encode([canonical_text(step)], self.embedding_model)[0]
        return [float(x) for x in self._gold_emb @ e]

    def rate(self, step: str, seen: Sequence[tuple[set[str], set[str]]], earlier: Sequence[StepVerdict],
             last: bool) -> StepVerdict:
        """The verdict of one step, given the earlier steps' words and verdicts and whether it is
        the last step: the rules about the step as a whole (meta-commentary, restatement,
        repetition, run-on), then :meth:`judge` on the step and on each of its claims."""
        text = (step or "").strip()
        if _META.search(text) or _META2.search(text):
            return StepVerdict(0, 0, "meta-commentary")
        terms = set(content_tokens(text))
        if not terms:
            return StepVerdict(0, 0, "empty or meaningless")
        if self.paper:  # H.2: pure repetition is 0/0, everything else is judged as a whole
            concluding = restatement(text, self.question_text, self.reference) is not None
            if not concluding and repeats(terms, negated_tokens(text), [w for w, v in zip(seen, earlier)
                                                                        if not v.reason.startswith(_NOT_SAID)]):
                return StepVerdict(0, 0, "repeats an earlier step")
            return self.judge(text)  # a conclusion naming the answer re-uses earlier words: no repeat
        restated = restatement(text, self.question_text, self.reference)
        if restated:
            # it adds nothing of its own: credited only as the closing conclusion of a trace whose
            # every earlier step is valid (MRPO App. H.2: the last steps reach the diagnosis); a
            # conclusion re-uses earlier words by nature, so it is not tested as a repeat
            if not (last and earlier and all(v.valid for v in earlier)):
                return StepVerdict(0, 0, restated)
            v = self.judge(text)
            return StepVerdict(v.gold_alignment, v.answer_contribution, f"{v.reason}; the conclusion of valid steps")
        said = [w for w, v in zip(seen, earlier) if not v.reason.startswith(_NOT_SAID)]
        if repeats(terms, negated_tokens(text), said):
            return StepVerdict(0, 0, "repeats an earlier step")
        claims = split_claims(text)
        n_words = len(text.split())
        if len(claims) > MAX_CLAIMS or n_words > MAX_WORDS:
            return StepVerdict(0, 0, f"run-on: {len(claims)} claims, {n_words} words in one step")
        whole = self.judge(text)
        if len(claims) == 1 or not whole.valid:
            return whole
        # several claims: judged as a whole. One wrong claim makes the step wrong; the step agrees
        # with the gold only when every claim does (an unsupported claim is not gold-aligned); it
        # contributes when the step or one of its claims does.
        parts = [self.judge(claim) for claim in claims]
        for claim, v in zip(claims, parts):
            if not v.valid and not v.reason.startswith(_UNMATCHED):
                return StepVerdict(0, 0, f"a claim of the step is wrong ({claim!r}: {v.reason})")
        align = int(whole.gold_alignment and all(v.valid for v in parts))
        contrib = int(whole.answer_contribution or any(v.answer_contribution for v in parts))
        if not (align or contrib):
            return StepVerdict(0, 0, f"{len(claims)} claims, not all supported ({whole.reason})")
        return StepVerdict(align, contrib, f"{whole.reason}; {len(claims)} claims")

    def judge(self, text: str) -> StepVerdict:
        """The rules about what one statement says: a statement (not keywords or stuffing), no
        evasion, no contradiction of the record, then gold alignment and answer contribution."""
        terms = set(content_tokens(text))
        if not terms:
            return StepVerdict(0, 0, "empty or meaningless")
        if _keyword_string(text) and not self.paper:
            return StepVerdict(0, 0, "not a statement (a noun phrase or keyword list)")
        if _stuffed(text):
            return StepVerdict(0, 0, "keyword stuffing")
        if _EVASION.search(text):
            return StepVerdict(0, 0, "evasion")
        toks_all = set(canon_tokens(text, True))
        mods = {_MODALITY_WORDS[t] for t in toks_all if t in _MODALITY_WORDS}
        if mods and self.modalities and not (mods & self.modalities):
            return StepVerdict(0, 0, f"wrong modality ({', '.join(sorted(mods))} vs {', '.join(sorted(self.modalities))})")
        sides = toks_all & {"left", "right"}
        if sides and self.sides and not (sides & self.sides):
            return StepVerdict(0, 0, f"wrong laterality ({', '.join(sorted(sides))})")
        step_regions = _regions_of(toks_all)
        if step_regions and self.regions and not (step_regions & self.regions):
            return StepVerdict(0, 0, f"organ outside the reference region ({', '.join(sorted(step_regions))})")
        step_neg = negated_tokens(text)
        # the step denies what the reference answer asserts ("no mass" for "Mass")
        denied = (step_neg & self.ref_terms) - self.ref_negated - _PLACE_WORDS
        if denied and not self.ref_polarity:
            return StepVerdict(0, 0, f"negates the reference answer ({', '.join(sorted(denied))})")
        contrib = self._contribution(text, terms, step_neg)
        if self.gold_sents:
            cos = self._gold_cosines(text)
            findings = terms - _LOCATION_WORDS
            align, why, conflict = 0, "no gold step matches", ""
            for g, g_terms, c in zip(self.gold_sents, self.gold_terms, cos):
                shared = {t for t in terms if any(_same_word(t, u) for u in g_terms)}
                overlap = len(shared) / len(terms)
                if not shared or not (overlap >= 0.5 or c >= _STEP_EMBED_THRESHOLD):
                    continue
                if findings and not (shared - _LOCATION_WORDS) and c < _STEP_EMBED_THRESHOLD:
                    continue  # the same place only ("left lung") with another finding is not the gold step
                g_neg = negated_tokens(g)
                flip = {t for t in shared & g_terms if (t in step_neg) != (t in g_neg)} - _PLACE_WORDS
                clash = _disjoint_groups(g, text, _ALL_GROUPS)
                if flip or clash:
                    conflict = conflict or (f"negation of {', '.join(sorted(flip))}" if flip else clash)
                    continue
                align, why = 1, f"gold overlap {overlap:.2f}, cosine {c:.2f}"
                break
            if not align and conflict:
                return StepVerdict(0, 0, f"contradicts the gold reasoning ({conflict})")
            if align and not contrib and not self.ref_polarity and _abnormal_finding(terms, step_neg):
                contrib, why = 1, why + "; a gold finding on the way to the answer"
        else:
            hits = []
            if mods and mods & self.modalities:
                hits.append("modality")
            if toks_all & self.organ_tokens or (step_regions & self.regions and toks_all & _ORGANS):
                hits.append("organ")
            if sides and sides & self.sides:
                hits.append("laterality")
            if contrib:
                hits.append("answer")
            align = int(bool(hits))
            why = "matches evidence: " + ", ".join(hits) if hits else "no evidence named"
        return StepVerdict(align, contrib, why)

    def _contribution(self, text: str, terms: set[str], step_neg: set[str]) -> int:
        if self.ref_polarity:
            about = terms & self.question_terms
            if not about:
                return 0
            says_no = bool(about & step_neg) or "absent" in terms or "normal" in terms and "abnormal" in self.question_terms
            return int(says_no == (self.ref_polarity == "no"))
        ref = self.ref_terms
        if not ref:
            return 0
        if _disjoint_groups(self.reference, text, _ALL_GROUPS):
            return 0
        if (ref & step_neg) - self.ref_negated - _PLACE_WORDS:
            return 0
        if _aligned(ref, terms)[2]:
            return 0  # a confusable term in place of the answer's ("epidural" for "subdural")
        return int(len(ref & terms) / len(ref) >= 0.5)


def verify_steps(question: str, reference: str, steps: Sequence[str], *, gold_reasoning: str | None = None,
                 evidence: dict | None = None, use_embeddings: bool = True,
                 embedding_model: str | None = None, step_prompt: str = "hardened") -> list[StepVerdict]:
    """One :class:`~medrl.types.StepVerdict` per step, in order (rules in the module docstring;
    ``step_prompt`` "hardened" or "paper", as :data:`medrl.judges.prompts.STEP_PROMPTS`)."""
    from medrl.judges.prompts import STEP_PROMPTS

    if step_prompt not in STEP_PROMPTS:
        raise ValueError(f"step_prompt must be one of {', '.join(STEP_PROMPTS)}, got {step_prompt!r}")
    ctx = _StepContext(question, reference, gold_reasoning, evidence,
                       use_embeddings=use_embeddings, embedding_model=embedding_model, step_prompt=step_prompt)
    steps = [str(s) for s in steps]
    out: list[StepVerdict] = []
    seen: list[tuple[set[str], set[str]]] = []
    for k, step in enumerate(steps):
        out.append(ctx.rate(step, seen, out, last=k == len(steps) - 1))
        seen.append((set(content_tokens(step)), negated_tokens(step)))
    return out
