"""The papers' encoders in the recipes, the offline MiniLM substitute, no hub access offline,
and evaluation passing the chosen BERTScore model (issue 13)."""

from __future__ import annotations

import pytest

from medrl.common.embeddings import PAPER_ENCODERS, available_offline, resolve_model, substitute_encoders
from medrl.train.recipes import RecipeError, list_recipes, load_recipe

BIO, STS, MEDEMBED = PAPER_ENCODERS["biomedbert"], PAPER_ENCODERS["biobert_sts"], PAPER_ENCODERS["medembed_large"]
EXPECTED = {  # recipe -> {(reward, option): paper model}
    "mrpo": {("mrpo_answer", "model"): BIO}, "grpo": {("mrpo_answer", "model"): BIO},
    "gdpo": {("mrpo_answer", "model"): BIO}, "dr_grpo": {("mrpo_answer", "model"): BIO},
    "armed": {("armed", "bertscore_model"): BIO, ("armed", "model"): STS},
    "armed_ablation_raw": {("armed_semantic", "bertscore_model"): BIO, ("armed_semantic", "model"): STS},
    "medix_r1": {("medix_embed", "model"): MEDEMBED}, "dapo": {("medix_embed", "model"): MEDEMBED},
    "gspo": {("medix_embed", "model"): MEDEMBED},
    "capo": {}, "stepgrpo": {}, "sft": {}, "armed_ablation_nosemantic": {},
}


def _used(recipe):
    return {(u["reward"], u["option"]): u["model"] for u in recipe.encoders["used"]}


@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)


#: a completion whose answer no guard decides (a paraphrase of the reference), so every
#: encoder-based reward has to run its encoder on it
PARAPHRASE = {"completions": ["<think>The vessel enters the kidney.</think><answer>artery of the kidney</answer>"],
              "answer": ["renal artery"]}


@pytest.fixture
def encoder_spy(monkeypatch):
    """Replaces the two encoder loaders (BERTScore scorers, sentence encoders) with fakes that
    record the model each call asks for; no model is loaded and the hub is never reached."""
    import numpy as np
    import torch

    import medrl.common.embeddings as embeddings
    import medrl.rewards.semantic as semantic

    asked = []

    class Scorer:
        def score(self, cands, refs):
            f = torch.full((len(cands),), 0.5)
            return f, f, f

    class Encoder:
        def encode(self, texts, **kw):
            return np.full((len(texts), 4), 0.5, dtype=np.float32)

    def load_bertscorer(model=None, num_layers=None, baseline_path=None):
        asked.append(("bertscore", model))
        return Scorer()

    def load_encoder(name_or_path=None):
        asked.append(("sentence", name_or_path))
        return Encoder()

    monkeypatch.setattr(semantic, "load_bertscorer", load_bertscorer)
    monkeypatch.setattr(embeddings, "load_encoder", load_encoder)
    return asked


def encoders_asked(name, asked):
    """``{(reward, kind): model}``: the encoder each reward of recipe ``name`` (the paper's
    encoders, no offline substitute) asks the loaders for when it scores one paraphrased answer."""
    from medrl.common.embeddings import DEFAULT_EMBEDDING_MODEL, REWARD_ENCODERS
    from medrl.judges import build_judge
    from medrl.train.recipes import build_reward_funcs

    funcs, _ = build_reward_funcs(load_recipe(name, overrides=["encoders.substitute=false"]),
                                  judge=build_judge("reference"))
    out = {}
    for fn in funcs:
        if fn.__name__ not in REWARD_ENCODERS:  # a reward with no encoder option
            continue
        asked.clear()
        fn(["p"], PARAPHRASE["completions"], answer=PARAPHRASE["answer"])
        for kind, model in asked:
            model = model or DEFAULT_EMBEDDING_MODEL  # the offline MiniLM, as recipe_encoders names it
            assert out.setdefault((fn.__name__, kind), model) == model, (name, fn.__name__, kind)
        assert asked, f"{name}: reward {fn.__name__} scored without its encoder"
    return out


def test_exact_hub_ids(encoder_spy):
    # the rewards of the papers' recipes ask for exactly these hub ids
    assert encoders_asked("mrpo", encoder_spy) == {
        ("mrpo_answer", "bertscore"): "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext"}
    assert encoders_asked("armed", encoder_spy) == {
        ("armed", "bertscore"): "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext",
        ("armed", "sentence"): "pritamdeka/BioBERT-mnli-snli-scinli-scitail-mednli-stsb"}
    assert encoders_asked("medix_r1", encoder_spy) == {("medix_embed", "sentence"): "abhinand/MedEmbed-large-v0.1"}
    assert BIO == "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext"
    assert STS == "pritamdeka/BioBERT-mnli-snli-scinli-scitail-mednli-stsb"
    assert MEDEMBED == "abhinand/MedEmbed-large-v0.1"


def test_every_recipe_names_its_papers_encoders(online, encoder_spy):
    from medrl.common.embeddings import REWARD_ENCODERS

    assert set(EXPECTED) <= set(list_recipes())
    for name in list_recipes():
        r = load_recipe(name)
        assert _used(r) == EXPECTED.get(name, _used(r)), name
        assert r.encoders["substitutions"] == [], name
        # and each reward asks the encoder loader for that model (the option's BERTScore or
        # sentence loader), so the papers' encoders are what scores the answers
        assert encoders_asked(name, encoder_spy) == {
            (reward, REWARD_ENCODERS[reward][option]): model for (reward, option), model in _used(r).items()}, name


def test_cpu_profile_substitutes_minilm_and_records_it(online, caplog):
    with caplog.at_level("WARNING", logger="medrl.train"):
        r = load_recipe("armed", profile="cpu")
    assert set(_used(r).values()) == {"default"}
    subs = {(s["reward"], s["option"]): s["paper_model"] for s in r.encoders["substitutions"]}
    assert subs == EXPECTED["armed"]
    assert r.to_dict()["encoders"]["substitutions"]  # goes to config.yaml
    assert sum("offline encoder substitute" in m for m in caplog.messages) == 2  # one line per swap, once
    # the rewards get the substitute
    opts = r.rewards[0]["options"]
    assert opts["model"] == "default" and opts["bertscore_model"] == "default"


def test_auto_substitutes_only_when_offline_and_uncached(monkeypatch, tmp_path):
    rewards = [{"name": "medix_embed", "options": {"model": MEDEMBED}},
               {"name": "embedding_cosine", "options": {"model": str(tmp_path)}}]  # a local folder
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not available_offline(MEDEMBED) and available_offline(str(tmp_path)) and available_offline(None)
    out, subs = substitute_encoders(rewards, "auto")
    assert out[0]["options"]["model"] == "default" and out[1]["options"]["model"] == str(tmp_path)
    assert [s["paper_model"] for s in subs] == [MEDEMBED]
    assert rewards[0]["options"]["model"] == MEDEMBED  # input untouched
    out, subs = substitute_encoders(rewards, False)
    assert subs == [] and out[0]["options"]["model"] == MEDEMBED
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    assert substitute_encoders(rewards, "auto")[1] == []  # online: the paper's model is used
    with pytest.raises(ValueError):
        substitute_encoders(rewards, "sometimes")
    with pytest.raises(RecipeError, match="encoders.substitute"):
        load_recipe("mrpo", overrides=["encoders.substitute=sometimes"])


def test_offline_never_reaches_the_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="HF_HUB_OFFLINE.*substitute"):
        resolve_model(MEDEMBED)
    r = load_recipe("medix_r1", overrides=["encoders.substitute=false"])
    assert _used(r)[("medix_embed", "model")] == MEDEMBED
    from medrl.rewards import REWARDS

    spec = next(x for x in r.rewards if x["name"] == "medix_embed")
    embed = REWARDS.get("medix_embed")(**spec["options"])
    # an answer the guard lets through (the left renal vein, and the renal artery "near the hilum",
    # are refused before any encoder loads)
    with pytest.raises(OSError, match="local Hugging Face cache"):
        embed(["p"], PARAPHRASE["completions"], answer=PARAPHRASE["answer"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dry_run_prints_encoders_and_substitutions(name, tmp_path, capsys, online):
    from PIL import Image

    from medrl.cli import main
    from medrl.data.record import VQARecord, write_jsonl

    # the dry run loads the training data too: two open questions with gold reasoning (MRPO keeps
    # only those), so no data folder is needed
    Image.new("RGB", (8, 8)).save(tmp_path / "img.png")
    write_jsonl([VQARecord(id=f"r{i}", images=[str(tmp_path / "img.png")], question="What is shown?", answer=a,
                           gold_reasoning="An opacity is seen.", answer_type="OPEN", open_ended=True)
                 for i, a in enumerate(["pneumonia", "edema"])], tmp_path / "d.jsonl")
    data = ["--data", f"jsonl:{tmp_path / 'd.jsonl'}"]
    assert main(["train", "--recipe", name, "--dry-run", *data]) == 0  # no model or run folder needed
    text = capsys.readouterr().out
    assert f"encoders of recipe {name}" in text
    for model in EXPECTED[name].values():
        assert model in text
    if not EXPECTED[name]:
        assert "none (no embedding or BERTScore reward)" in text
    assert main(["train", "--recipe", name, "--model", "tiny", "--out", str(tmp_path / "b"), "--dry-run",
                 "--profile", "cpu", *data]) == 0
    text = capsys.readouterr().out
    assert f"offline substitutions: {len(EXPECTED[name]) or 'none'}" in text
    for model in EXPECTED[name].values():
        assert f"offline substitute for the paper's {model}" in text
    import yaml

    assert not (tmp_path / "a").exists()
    cfg = yaml.safe_load((tmp_path / "b" / "config.yaml").read_text())
    assert len(cfg["recipe"]["encoders"]["substitutions"]) == len(EXPECTED[name])


def test_eval_passes_the_bertscore_model(monkeypatch):
    import medrl.rewards.hss as hss
    from medrl.eval.scoring import score_rows

    seen = {}

    def fake(preds, refs, model=None, bertscore_model=None):
        seen.update(model=model, bertscore_model=bertscore_model)
        return [{"bleu1": 0.0, "rouge1": 0.0, "bertscore": 0.0, "cosine": 0.0, "hss": 0.0} for _ in preds]

    monkeypatch.setattr(hss, "hss_batch", fake)
    rows = [{"key": "d:1", "reference": "renal artery", "output": "<think>a</think><answer>renal artery</answer>",
             "question": "q", "answer_type": "OPEN", "open_ended": True}]
    score_rows(rows, None, rubrics=(), verify_steps=False, text_metrics=True, embedding_model="E",
               bertscore_model="B")
    assert seen == {"model": "E", "bertscore_model": "B"}
