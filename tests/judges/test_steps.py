"""Step checks shared by the reference judge and the LLM judge prompt (MRPO Eq. 3, App. H.2):
a step that only restates the answer or the question, a run-on step packing several claims, and
a near-duplicate of an earlier step earn no credit, while an honest multi-step trace stays valid.

Besides a few written examples, the properties are checked on generated variants (Hypothesis) of
valid and partly valid traces written for this file: (a) restating steps inserted anywhere,
(b) all steps joined into one run-on sentence, (c) a step repeated with light paraphrase. None
may raise MRPO's process reward (``mrpo_process``, the mean of R_proc over the parsed steps)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medrl.judges import prompts, run_sync
from medrl.judges.openai_judge import OpenAIJudge
from medrl.judges.reference import ReferenceJudge
from medrl.judges.reference.steps import MAX_CLAIMS, restatement, split_claims
from medrl.answers.completion import completion_steps
from medrl.judges.server import ReferenceBackend, create_app, serve_in_thread
from medrl.rewards import REWARDS

J = ReferenceJudge(use_embeddings=False)
PROCESS = REWARDS.get("mrpo_process")(judge=J, step_prompt="hardened")  # the rules under test (the paper prompt credits a restated answer)

# Four records written for this file, each with a valid trace and one wrong step (bad).
TRACES = [
    dict(q="Where is the mass?", ref="Left kidney",
         gold="Axial contrast CT of the abdomen. A round enhancing mass arises from the left kidney. The right "
              "kidney and the liver are normal. The mass is in the left kidney.",
         steps=["This is an axial contrast-enhanced CT of the abdomen.",
                "A round enhancing mass arises from the lower pole of the left kidney.",
                "The right kidney appears normal.",
                "The mass therefore sits in the left kidney."],
         bad="A round mass arises from the right kidney."),
    dict(q="What is the pathology?", ref="Right pleural effusion",
         gold="Frontal chest radiograph. A homogeneous opacity fills the right lower hemithorax with a meniscus and "
              "blunts the right costophrenic angle. The left lung is clear. Diagnosis: right pleural effusion.",
         steps=["This is a frontal chest radiograph.",
                "A homogeneous opacity with a meniscus fills the right lower hemithorax.",
                "The right costophrenic angle is blunted.",
                "The left lung is clear.",
                "These findings indicate a right pleural effusion."],
         bad="A large effusion fills the left hemithorax."),
    dict(q="What abnormality is seen in the brain?", ref="Subdural hematoma",
         gold="Axial non-contrast CT of the head. A crescent-shaped hyperdense collection lies along the right "
              "convexity. It crosses suture lines and causes mild midline shift. This is an acute subdural hematoma.",
         steps=["This is an axial non-contrast CT of the head.",
                "A crescent-shaped hyperdense collection lies along the right convexity.",
                "The collection crosses the suture lines.",
                "It causes a mild midline shift.",
                "The collection is an acute subdural hematoma."],
         bad="A collection lies along the left convexity."),
    dict(q="Is there a fracture of the femur?", ref="Yes",
         gold="Frontal radiograph of the right hip and femur. A transverse lucent line crosses the proximal femoral "
              "shaft with cortical step-off. There is a fracture of the femur.",
         steps=["This is a frontal radiograph of the hip and femur.",
                "A transverse lucent line crosses the proximal femoral shaft.",
                "The femoral cortex shows a step-off at the fracture line.",
                "So there is a fracture of the femur."],
         bad="This is an MRI of the brain."),
]

RESTATE = ["The answer is {r}.", "So the diagnosis is {r}.", "Therefore {r}.", "Final answer: {r}.", "Answer: {r}.",
           "This is {r}.", "In conclusion, the answer is {r}.", "Thus, the most likely diagnosis is {r}.",
           "The finding is {r}.", "These findings are consistent with {r}.", "Hence the correct answer is {r}."]
JOINERS = [", and ", "; ", " and ", ", so ", ", "]


def verdicts(t: dict, steps: list[str]):
    v = run_sync(J.verify_steps(t["q"], t["ref"], steps, gold_reasoning=t["gold"]))
    assert v.scored and len(v.value) == len(steps)
    return v.value


def process(t: dict, steps: list[str], answer: str | None = None) -> float:
    """mrpo_process on a completion whose <think> holds the steps (parsed again by the reward)."""
    text = f"<think>{' '.join(steps)}</think><answer>{answer or t['ref']}</answer>"
    assert len(completion_steps(text)) == len(steps)  # the variants parse into the intended steps
    return PROCESS.sync(["q"], [text], answer=[t["ref"]], question=[t["q"]], gold_reasoning=[t["gold"]])[0]


def partly_valid(t: dict, k: int) -> list[str]:
    return t["steps"][:k] + [t["bad"]] + t["steps"][k:]


# ------------------------------------------------------------------ written examples
@pytest.mark.parametrize("t", TRACES, ids=lambda t: t["ref"])
def test_valid_multi_step_trace_stays_valid(t):
    assert all(v.valid for v in verdicts(t, t["steps"]))
    assert process(t, t["steps"]) == 1.0
    assert not verdicts(t, partly_valid(t, 1))[1].valid  # the wrong step really is wrong


def test_run_on_answer_restating_and_duplicate_steps_are_invalid():
    q, ref = "What is the diagnosis?", "Diverticulitis"
    gold = ("Axial contrast CT of the abdomen and pelvis. The sigmoid colon wall is thickened with pericolic fat "
            "stranding. Several diverticula arise from the sigmoid colon. This is acute sigmoid diverticulitis.")
    run_on = ("This is an axial CT of the abdomen and the sigmoid colon wall is thickened, there is pericolic fat "
              "stranding and several diverticula arise from the sigmoid colon, so the diagnosis is diverticulitis.")
    honest_wrong = ["This is an axial CT of the abdomen and pelvis.",
                    "The appendix is dilated with periappendiceal fat.",
                    "The sigmoid colon wall is thickened with pericolic fat stranding."]
    t = dict(q=q, ref=ref, gold=gold)
    v = verdicts(t, [run_on])
    assert not v[0].valid and v[0].reason.startswith("run-on")
    # "The answer is Diverticulitis" inside <think> while the final answer is wrong
    v = verdicts(t, ["The answer is Diverticulitis."])
    assert not v[0].valid and v[0].reason == "restates the answer"
    v = verdicts(t, honest_wrong + ["The answer is Diverticulitis."])
    assert not v[-1].valid and v[-1].reason == "restates the answer"
    v = verdicts(t, ["The sigmoid colon wall is thickened with pericolic fat stranding.",
                     "Again, the wall of the sigmoid colon is thickened with pericolic fat stranding."])
    assert v[0].valid and not v[1].valid and v[1].reason == "repeats an earlier step"
    # mrpo_process: the restating and run-on traces earn less than the plain honest (wrong) trace
    plain = process(t, honest_wrong, answer="Appendicitis")
    assert 0 < plain < 1
    assert process(t, ["The answer is Diverticulitis."], answer="Appendicitis") < plain
    assert process(t, honest_wrong + ["The answer is Diverticulitis."], answer="Appendicitis") < plain
    assert process(t, [run_on], answer="Appendicitis") < plain


def test_restatement_is_a_conclusion_only_after_valid_steps():
    t = TRACES[0]
    steps = t["steps"] + ["The answer is left kidney."]
    assert verdicts(t, steps)[-1].valid  # the conclusion of a wholly valid trace
    assert not verdicts(t, ["The answer is left kidney."] + t["steps"])[0].valid  # not as an opening
    assert not verdicts(t, partly_valid(t, 2) + ["The answer is left kidney."])[-1].valid
    assert not verdicts(t, ["The answer is left kidney."])[0].valid  # no reasoning at all


@pytest.mark.parametrize("step,expected", [
    ("The answer is pneumonia.", "restates the answer"), ("Final answer: Pneumonia", "restates the answer"),
    ("So the diagnosis is pneumonia.", "restates the answer"), ("Therefore, pneumonia.", "restates the answer"),
    ("This is pneumonia.", "restates the answer"), ("What is the diagnosis?", "restates the question"),
    # observations and inferences with content of their own are not restatements
    ("There is a patchy opacity in the right lower lobe.", None),
    ("These findings indicate pneumonia of the right lower lobe with an air bronchogram.", None),
    ("Pneumonia is present in the right lower lobe.", None),
])
def test_restatement_needs_a_frame_and_no_content_of_its_own(step, expected):
    assert restatement(step, "What is the diagnosis?", "Pneumonia") == expected


@pytest.mark.parametrize("step,n", [
    ("The left temporal lobe is hyperintense and swollen compared with the right.", 1),
    ("The right costophrenic angle is blunted, with opacity at the right base.", 1),
    ("There is a dense opacity at the right base that obscures the right hemidiaphragm.", 1),
    ("The trachea remains midline, so there is no sign of tension.", 2),
    ("The liver is enlarged, the spleen is normal and the kidneys enhance symmetrically.", 3),
    ("The heart is enlarged; the lungs are clear; there is no effusion.", 3),
])
def test_split_claims_counts_clauses_not_commas(step, n):
    assert len(split_claims(step)) == n


def test_the_llm_prompt_states_the_same_step_rules():
    text = prompts.verify_steps("q", "r", ["a.", "b."], gold_reasoning="g")[-1]["content"]
    assert "only restates the question, the answer or the reference answer" in text
    assert f"more than\n{MAX_CLAIMS} claims" in text and "any of its claims is wrong" in text
    assert "only repeats an earlier step" in text and "near-identical" in text
    # the reply format the parser reads is unchanged
    assert '{"steps": [{"step": 1, "gold_alignment": 0, "answer_contribution": 0}, ...]}' in text


def test_the_prompt_path_gives_the_same_step_verdicts():
    """The same trace through the LLM-judge client and prompt (answered by the reference backend
    of ``medrl serve-judge``) gets the same verdicts as the reference judge called directly."""
    t = TRACES[1]
    steps = (["The answer is right pleural effusion."] + t["steps"][:2] + [t["steps"][1].replace("A ", "Again, a ")]
             + ["The left lung is clear, the heart is normal and there is no pneumothorax."] + t["steps"][2:])
    direct = [(v.gold_alignment, v.answer_contribution) for v in verdicts(t, steps)]
    assert direct[0] == direct[3] == direct[4] == (0, 0)
    with serve_in_thread(create_app(ReferenceBackend(use_embeddings=False))) as url:
        client = OpenAIJudge("medrl-reference", base_url=url, cache_path=":memory:", timeout=10, max_retries=1)
        try:
            v = run_sync(client.verify_steps(t["q"], t["ref"], steps, gold_reasoning=t["gold"]))
        finally:
            client.close()
    assert v.scored and [(x.gold_alignment, x.answer_contribution) for x in v.value] == direct


# ------------------------------------------------------------------ generated variants
def _lower_first(s: str) -> str:
    return s[0].lower() + s[1:] if s[:2] != s[:2].upper() else s


SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
trace_and_base = st.sampled_from(TRACES).flatmap(
    lambda t: st.tuples(st.just(t), st.one_of(st.just(list(t["steps"])),
                                              st.integers(0, len(t["steps"])).map(lambda k: partly_valid(t, k)))))


@SETTINGS
@given(tb=trace_and_base, frames=st.lists(st.sampled_from(RESTATE), min_size=1, max_size=2),
       case=st.sampled_from([str, str.lower, str.upper]), data=st.data())
def test_appending_or_inserting_restatements_never_raises_the_process_reward(tb, frames, case, data):
    t, base = tb
    steps = list(base)
    for frame in frames:
        steps.insert(data.draw(st.integers(0, len(steps))), frame.format(r=case(t["ref"])))
    assert process(t, steps) <= process(t, base)


@SETTINGS
@given(tb=trace_and_base, joiners=st.lists(st.sampled_from(JOINERS), min_size=8, max_size=8))
def test_joining_the_steps_into_one_run_on_never_raises_the_process_reward(tb, joiners):
    t, base = tb
    parts = [s.rstrip(".") for s in base]
    run_on = parts[0] + "".join(j + _lower_first(p) for j, p in zip(joiners, parts[1:])) + "."
    assert process(t, [run_on]) <= process(t, base)
    if len(base) > MAX_CLAIMS:
        assert process(t, [run_on]) == 0.0


PARAPHRASE = [("This is ", "Again, this is "), ("The ", "Once more, the "), ("A ", "Again, a "),
              ("kidney", "renal"), ("haematoma", "hematoma"), ("hematoma", "haematoma"), ("radiograph", "X-ray"),
              ("appears", "looks"), ("fills", "occupies"), (".", " again."), ("So there", "Thus there")]


@SETTINGS
@given(t=st.sampled_from(TRACES), data=st.data(),
       edits=st.lists(st.sampled_from(PARAPHRASE), min_size=1, max_size=3))
def test_a_lightly_paraphrased_duplicate_is_invalid_and_never_raises_the_reward(t, data, edits):
    steps = list(t["steps"])
    i = data.draw(st.integers(0, len(steps) - 1))
    dup = steps[i]
    for old, new in edits:
        dup = dup.replace(old, new, 1)
    j = data.draw(st.integers(i + 1, len(steps)))
    steps.insert(j, dup)
    assert not verdicts(t, steps)[j].valid
    assert process(t, steps) <= process(t, t["steps"])
