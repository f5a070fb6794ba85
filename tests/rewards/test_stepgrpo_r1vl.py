"""R1-VL's released StepGRPO pieces as options (jingyi0000/R1-VL, ``src/open_r1/grpo.py`` and
``prompts/extract_key_steps.py``): StepRVR on the literal section headers, key steps matched as
lower-cased substrings of the ``### Step N:`` sections, and the extraction rule (per section,
phrases of at most three words). Generated responses both ways."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings, strategies as st

from medrl.judges import prompts
from medrl.judges.reference import ReferenceJudge
from medrl.rewards import REWARDS
from medrl.rewards.correctness import uses_correctness
from medrl.rewards.stepgrpo import key_step_ratio, r1vl_structure, validity_reward


def r1vl(steps, final="liver mass", desc="An axial CT of the abdomen.", rationale="Liver lesions enhance."):
    body = "".join(f"### Step {i}:\n{s}\n" for i, s in enumerate(steps, 1))
    return f"### Image Description:\n{desc}\n### Rationales:\n{rationale}\n{body}### The final answer is: {final}"


WORDS = st.text(alphabet=st.sampled_from("abcdefghij klmno"), min_size=3, max_size=30).filter(str.strip)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(WORDS, min_size=1, max_size=5))
def test_r1vl_structure_both_ways(steps):
    ok = r1vl(steps)
    assert r1vl_structure(ok) == {"complete": True, "logical": True, "steps": len(steps)}
    assert validity_reward(ok, structure="r1vl") == 1.0
    # meaning-changing variants lose the reward
    assert validity_reward(ok.replace("### Rationales:", "Rationales:"), structure="r1vl") == 0.0  # incomplete
    assert validity_reward(ok.replace("### Step 1:", "### Step 0:"), structure="r1vl") == 0.0       # numbering
    final_first = ok.replace("### Image Description:", "### The final answer is: x\n### Image Description:", 1)
    final_first = final_first[: final_first.rindex("### The final answer is:")]
    assert validity_reward(final_first, structure="r1vl") == 0.0                                  # answer first
    if len(steps) > 1:
        swapped = ok.replace("### Step 1:", "### Step X:").replace("### Step 2:", "### Step 1:").replace(
            "### Step X:", "### Step 2:")
        assert validity_reward(swapped, structure="r1vl") == 0.0
    # medrl's heuristic reads <think> sentences, not headers: the same text is not its format
    assert validity_reward(ok) == 0.0


def test_r1vl_logic_edge_cases_of_the_released_checks():
    # ending on the bare final-answer header counts as ordered (the released check accepts it)
    assert r1vl_structure(r1vl(["a b c"]).rsplit(" liver mass", 1)[0])["logical"]
    # no step header at all: not logical (and not complete)
    assert r1vl_structure("### Image Description: x ### Rationales: y ### The final answer is: z") == {
        "complete": False, "logical": False, "steps": 0}


def test_r1vl_key_step_matching_is_released_substring_matching():
    text = r1vl(["A hypodense MASS sits in the liver.", "No ascites is seen."], desc="Spleen is normal.")
    keys = ["hypodense mass", ["ascites", "free fluid"], "spleen"]
    # case-insensitive substrings of the Step sections only ("spleen" is in the description)
    assert key_step_ratio(text, keys, "r1vl") == pytest.approx(2 / 3)
    # a substring inside a longer word matches, and a negation does not block it (released behaviour;
    # medrl's soft matching refuses both)
    assert key_step_ratio(r1vl(["The lesion is massive."]), ["mass"], "r1vl") == 1.0
    assert key_step_ratio("<think>The lesion is massive.</think>", ["mass"], "soft") == 0.0
    assert key_step_ratio(r1vl(["No ascites is seen."]), ["ascites"], "r1vl") == 1.0
    # no ### Step sections: nothing matches
    assert key_step_ratio("<think>A hypodense mass.</think><answer>x</answer>", ["hypodense mass"], "r1vl") == 0.0


def test_steprar_and_steprvr_take_the_r1vl_options():
    # R1-VL's sections inside medrl's <think>: the answer is read under R1-VL's header, not from <answer>,
    # and decided here (the trainer's correct column, decided on <answer>, is not read)
    text = f'<think>{r1vl(["A hypodense mass sits in the liver."], final="liver mass")}\n</think><answer>cyst</answer>'
    rar = REWARDS.get("steprar")(match="r1vl")
    assert not uses_correctness(rar) and uses_correctness(REWARDS.get("steprar")())
    out = rar(prompts=["q"], completions=[text], answer=["liver mass"], question=["What is seen?"],
              key_steps=[["hypodense mass", "spleen"]], correct=[False])
    assert out == [pytest.approx(1 + 0.1 * 0.5)]
    wrong = rar(prompts=["q"], completions=[text.replace("is: liver mass", "is: spleen")], answer=["liver mass"],
                key_steps=[["hypodense mass", "spleen"]], correct=[True])
    assert wrong == [pytest.approx(0.1 * 0.5)]  # answered, wrong: alpha x k
    assert REWARDS.get("steprvr")(structure="r1vl")(prompts=["q"], completions=[text]) == [1.0]
    # the answer is the rest of the header's line, as released: "liver mass</think>..." is not "liver mass"
    same_line = text.replace("\n</think>", "</think>")
    assert rar(prompts=["q"], completions=[same_line], answer=["liver mass"],
               key_steps=[["hypodense mass", "spleen"]]) == [pytest.approx(0.1 * 0.5)]
    with pytest.raises(ValueError, match="structure"):
        REWARDS.get("steprvr")(structure="headers")


def test_r1vl_extraction_prompt_and_reference_judge():
    t = " ".join(prompts.extract_key_steps("Q?", "liver mass", "reasoning", style="r1vl")[1]["content"].split())
    for rule in ("from each section except the final answer", "at most three for the image description",
                 "exactly as it is written", "at most three words", "never list the same element twice"):
        assert rule in t.lower(), rule
    assert prompts.prompt_rules(prompts.extract_key_steps("Q?", "a", "r", style="r1vl")[1]["content"]) == "r1vl"
    reasoning = "The axial CT shows a large hypodense mass in the right hepatic lobe. There is no ascites."
    v = asyncio.run(ReferenceJudge(use_embeddings=False).extract_key_steps("What is seen?", "liver mass", reasoning,
                                                                           style="r1vl"))
    assert v.scored and all(len(p.split()) <= 3 and p in reasoning for p in v.value)


# A completion in R1-VL's own format (no <think>, no <answer>): its prompt asks for these sections and
# puts the answer under "### The final answer is:".
R1VL_COMPLETION = """### Image Description:
An axial CT image of the upper abdomen.
### Rationales:
The question asks which organ holds the lesion; a focal lesion is read from its location.
### Step 1:
A hypodense mass sits in the right lobe of the liver.
### Step 2:
There is no ascites around the liver.
### The final answer is: liver"""
R1VL_KEYS = [["hypodense mass"], ["ascites", "free fluid"], ["spleen"]]


def test_r1vl_format_end_to_end_scores_as_released():
    """The released functions (R1-VL src/open_r1/grpo.py), worked by hand on R1VL_COMPLETION:
    key_step_single joins the ### Step sections, lower-cased, and counts the key steps with a form
    occurring as a substring - "hypodense mass" (Step 1) and "ascites" (Step 2), not "spleen" (only
    in no step): k = 2/3; accuracy_reward reads "liver" after the final-answer header, equal to the
    solution, so 1.0 + 0.1 * k = 1.0667; validity_reward: all four headers, steps 1, 2 in order, the
    final answer after the last step: 1.0."""
    steps = ("a hypodense mass sits in the right lobe of the liver. there is no ascites around the liver.")
    k = sum(any(f in steps for f in forms) for forms in R1VL_KEYS) / len(R1VL_KEYS)
    assert k == pytest.approx(2 / 3)
    released_accuracy, released_validity = 1.0 + 0.1 * k, 1.0
    assert round(released_accuracy, 4) == 1.0667

    rar = REWARDS.get("steprar")(match="r1vl")
    rvr = REWARDS.get("steprvr")(structure="r1vl")
    cols = dict(answer=["liver"], question=["Which organ holds the lesion?"], key_steps=[R1VL_KEYS],
                correct=[False])  # the trainer's column reads <answer> (none here): not used by match r1vl
    assert rar(prompts=["q"], completions=[R1VL_COMPLETION], **cols) == [pytest.approx(released_accuracy)]
    assert rvr(prompts=["q"], completions=[R1VL_COMPLETION]) == [released_validity]
    # TRL's conversational completions give the same
    chat = [[{"role": "assistant", "content": R1VL_COMPLETION}]]
    assert rar(prompts=["q"], completions=chat, **cols) == [pytest.approx(released_accuracy)]
    # a wrong answer keeps alpha * k (both sides agree)
    wrong = R1VL_COMPLETION.replace("is: liver", "is: spleen")
    assert rar(prompts=["q"], completions=[wrong], **cols) == [pytest.approx(0.1 * k)]
    # no answer under the header: Eq. 2's null answer scores 0; the released code would still pay
    # 0.1 * k (it compares the whole completion, then adds the key-step term) - medrl takes the paper's side
    null = R1VL_COMPLETION.replace("is: liver", "is:")
    assert rar(prompts=["q"], completions=[null], **cols) == [0.0]


def test_r1vl_answer_is_the_released_extraction():
    from medrl.rewards.stepgrpo import r1vl_answer

    assert r1vl_answer(R1VL_COMPLETION) == "liver"
    assert r1vl_answer("### The final answer is:\n  left kidney\nmore text") == "left kidney"  # the next line
    assert r1vl_answer("### The final answer is: B\n### The final answer is: C") == "B"  # the first header
    assert r1vl_answer("<think>x</think><answer>liver</answer>") is None
    assert r1vl_answer("### The final answer is:   ") is None
