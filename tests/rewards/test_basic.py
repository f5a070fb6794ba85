"""Format, modality and lexical rewards; the reward registry; the TRL calling convention."""

import pickle

import pytest

from medrl.rewards import REWARDS
from medrl.rewards.format import format_reward
from medrl.rewards.lexical import bleu1, rouge1, tokens
from medrl.rewards.modality import modality_reward, predicted_tag

GOOD = "<think>The CT shows the liver.</think>\n<answer>left lung</answer>"


def resp(answer, think="The chest X-ray shows an opacity.", prefix=""):
    return f"{prefix}<think>{think}</think><answer>{answer}</answer>"


# ---------------------------------------------------------------- format (MediX-R1 2.3.3)
def test_format_reward():
    assert format_reward(GOOD) == 1.0
    assert format_reward("<CT_SCAN> " + GOOD) == 1.0  # the tag before <think> is allowed
    assert format_reward("<think>x</think>") == 0.0
    assert format_reward("<answer>a</answer><think>x</think>") == 0.0
    assert format_reward(GOOD + " trailing words") == 0.0
    fn = REWARDS.get("format")()
    assert fn.__name__ == "format"
    chat = [{"role": "assistant", "content": GOOD}]
    assert fn(["p", "p", "p"], [GOOD, chat, "plain text"]) == [1.0, 1.0, 0.0]


# ---------------------------------------------------------------- modality (MediX-R1 2.3.4)
def test_modality_reward():
    assert predicted_tag("<CT_SCAN>") == "CT_SCAN"
    assert predicted_tag("ct_scan") == "CT_SCAN"
    assert predicted_tag("Modality: CT_SCAN") is None
    assert predicted_tag("CT") is None  # a dataset name, not one of the 16 tags
    assert modality_reward("<ct_scan>", "CT_SCAN") == 1.0
    assert modality_reward("<MRI_SCAN>", "CT_SCAN") == 0.0
    assert modality_reward(None, "CT_SCAN") == 0.0
    with pytest.raises(ValueError):
        modality_reward("<CT_SCAN>", "not a modality")


def test_modality_callable_zero_without_tag():
    # issue 13: a record without a tag scores 0 (counted), never None - no rollout is excluded for it
    fn = REWARDS.get("modality")()
    comps = [resp("a", prefix="<X_RAY> "), resp("a", prefix="<CT_SCAN> "), resp("a"), resp("a", prefix="<X_RAY>")]
    out = fn(["p"] * 4, comps, modality_tag=["X_RAY", "X_RAY", "X_RAY", None], modality=[None, None, None, None])
    assert out == [1.0, 0.0, 0.0, 0.0] and fn.counts["untagged"] == 1
    # falls back to mapping the raw modality name when the tag column is empty
    assert fn(["p"], [resp("a", prefix="<CT_SCAN>")], modality_tag=[None], modality=["CT"]) == [1.0]
    # no modality columns at all: every row scores 0
    assert fn(["p"], [resp("a", prefix="<CT_SCAN>")]) == [0.0]


# ---------------------------------------------------------------- lexical
def test_tokens_drop_punctuation_and_case():
    assert tokens("Left lung.") == ["left", "lung"]
    assert tokens("T1-weighted") == ["t1", "weighted"]


def test_rouge1_hand_worked():
    # pred {left, lung}, ref {the, left, lung}: P = 2/2, R = 2/3, F = 2PR/(P+R) = (4/3)/(5/3) = 0.8
    assert rouge1("left lung", "the left lung") == pytest.approx(0.8)
    # pred {right, lower, lobe}, ref {left, lower, lobe, pneumonia}: overlap 2,
    # P = 2/3, R = 2/4, F = 2 * (1/3) / (7/6) = 4/7 = 0.571429
    assert rouge1("right lower lobe", "left lower lobe pneumonia") == pytest.approx(4 / 7)
    assert rouge1("Left lung.", "left lung") == 1.0
    assert rouge1("heart", "liver") == 0.0
    assert rouge1("", "liver") == 0.0 and rouge1("...", "liver") == 0.0


def test_bleu1_hand_worked():
    # clipped unigram precision 2/2 = 1; pred shorter (2 < 3): BP = exp(1 - 3/2) = 0.606531
    assert bleu1("left lung", "the left lung") == pytest.approx(0.606531, abs=1e-6)
    # precision 2/3, BP = exp(1 - 4/3) = 0.716531 -> 0.477688
    assert bleu1("right lower lobe", "left lower lobe pneumonia") == pytest.approx(0.477688, abs=1e-6)
    # "the" x3 against "the cat": clipped count min(3, 1) = 1 -> 1/3; pred longer so BP = 1
    assert bleu1("the the the", "the cat") == pytest.approx(1 / 3)
    # short exact matches are 1.0 whatever the case or punctuation
    assert bleu1("Yes", "yes") == 1.0
    assert bleu1("Left lung.", "left lung") == 1.0
    assert bleu1("heart", "liver") == 0.0
    assert bleu1("", "liver") == 0.0


def test_lexical_callables_none_for_missing_reference():
    comps = [resp("left lung"), resp("left lung"), resp("left lung"), "no answer block"]
    answers = ["the left lung", None, "  ", "left lung"]
    r = REWARDS.get("rouge1")()
    b = REWARDS.get("bleu1")()
    assert r.__name__ == "rouge1" and b.__name__ == "bleu1"
    # "left lung" is "the left lung" up to an article: scored as the reference (full reward)
    assert r(["p"] * 4, comps, answer=answers) == [pytest.approx(1.0), None, None, 0.0]
    out = b(["p"] * 4, comps, answer=answers, trainer_state=None, completion_ids=[[1]] * 4)
    assert out == [pytest.approx(1.0), None, None, 0.0]
    # an answer that is not the reference keeps the plain metric: ROUGE-1 F of "mass in liver" vs
    # "liver mass" = 2 * (2/3 * 1) / (2/3 + 1) = 0.8
    assert r(["p"], [resp("mass in liver")], answer=["liver mass"]) == [pytest.approx(0.8)]
    assert r(["p"], [resp("x")]) == [None]  # no answer column at all
    with pytest.raises(ValueError, match="answer"):
        r(["p", "p"], [resp("x"), resp("y")], answer=["x"])


def test_exact_match_pays_the_reference_words_only():
    """The brittle baseline MediX-R1 argues against: a right answer in other words earns nothing
    (no equivalence mapping), case and punctuation aside; a completion with two answers is unscored."""
    from medrl.types import UNSCORABLE

    f = REWARDS.get("exact_match")()
    refs = ["axial CT of the liver", "CT", "liver", "CT", None]
    preds = ["Axial CT of the liver.", "computed tomography", "hepatic parenchyma", "CT or MRI", "x"]
    assert f(["p"] * 5, [resp(x) for x in preds], answer=refs) == [1.0, 0.0, 0.0, 0.0, None]
    assert f(["p"], ["<answer>CT</answer> <answer>MRI</answer>"], answer=["CT"]) == [UNSCORABLE]
    assert f(["p"], ["no answer block"], answer=["CT"]) == [0.0]


# ---------------------------------------------------------------- registry
EXPECTED = {
    "format", "modality", "rouge1", "bleu1", "bertscore", "embedding_cosine", "hss",
    "mrpo_answer", "mrpo_length", "armed_textual", "armed_semantic", "armed_adaptive_semantic",
    "armed", "medix_embed", "steprar", "steprvr", "capo_accuracy", "capo_perception", "exact_match",
}
JUDGED = {"medix_llm", "mrpo_process", "capo_consistency"}


def test_registry_has_every_reward():
    names = set(REWARDS.names())
    assert EXPECTED <= names
    try:
        import medrl.rewards.judged  # noqa: F401  (written by the judges' owner)
    except ModuleNotFoundError:
        pass
    else:
        assert JUDGED <= names


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_registry_factories_build_named_picklable_callables(name):
    fn = REWARDS.get(name)()
    assert callable(fn) and fn.__name__ == name
    clone = pickle.loads(pickle.dumps(fn))  # reward workers in other processes need this
    assert clone.__name__ == name


def test_registry_rule_based_rewards_run_on_a_batch():
    comps = [resp("left lung"), "garbage"]
    cols = dict(answer=["left lung", "left lung"], key_steps=[["opacity"], ["opacity"]],
                modality_tag=["X_RAY", "X_RAY"], corrupted_completions=[resp("no"), resp("no")])
    for name in ["format", "modality", "rouge1", "bleu1", "mrpo_length", "armed_textual",
                 "steprar", "steprvr", "capo_accuracy", "capo_perception"]:
        out = REWARDS.get(name)()(["p", "p"], comps, **cols)
        assert len(out) == 2 and all(v is None or isinstance(v, float) for v in out), name


def test_registry_unknown_name_and_option():
    with pytest.raises(KeyError, match="unknown reward"):
        REWARDS.get("no_such_reward")
    with pytest.raises(TypeError):
        REWARDS.get("rouge1")(bogus=1)
    with pytest.raises(TypeError):
        REWARDS.get("armed")(bogus=1)


def test_format_requires_the_answer_after_the_reasoning():
    assert format_reward("<think>r</think><answer>a</answer>") == 1.0
    assert format_reward("<CT_SCAN> <think>r</think> <answer>a</answer>") == 1.0  # modality tag is allowed
    assert format_reward("<answer>a</answer> <think>r</think> <answer>a</answer>") == 0.0  # stray answer first
    assert format_reward("</think><think>r</think><answer>a</answer>") == 0.0
