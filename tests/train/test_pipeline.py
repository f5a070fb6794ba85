"""Which data a run trains on when ``--data`` is not given: the recipe's ``data.prefer`` (the
paper's own training data, MediX-R1 App. A.8's MBZUAI/medix-rl-data) when present, else medrl's
default; the source used is printed and reported."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from medrl.train.pipeline import DEFAULT_TRAIN_DATA, load_training_records, training_source
from medrl.train.recipes import RecipeError, load_recipe


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (90, 10, 10)).save(buf, format="PNG")
    return buf.getvalue()


def medix_rl_data(root):
    """``<root>/medix-rl-data/data/train-00000-of-00001.parquet`` in the published columns
    (id, image list, source, problem, solution with its leading modality tag)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": "r1", "image": [{"bytes": _png(), "path": "a.png"}], "source": "slake",
             "problem": "<image>Which organ is shown?", "solution": "<CT_SCAN> liver"},
            {"id": "r2", "image": [{"bytes": _png(), "path": "b.png"}], "source": "rad",
             "problem": "Is there a pneumothorax?", "solution": "<X_RAY>no"}]
    folder = root / "medix-rl-data" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "train-00000-of-00001.parquet")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))


def test_medix_r1_trains_on_its_own_data_when_present(tmp_path, capsys):
    recipe = load_recipe("medix_r1", check_trl=False)
    assert recipe.data["prefer"] == ["medix_rl:train"]
    data = tmp_path / "data"
    medix_rl_data(data)
    report: dict = {}
    records = load_training_records(recipe, None, data_dir=str(data), report=report)
    assert report["data_source"] == "medix_rl:train"
    assert [r.answer for r in records] == ["liver", "no"] and records[0].id == "medix_rl-r1"
    assert "training data: medix_rl:train (the first present of the recipe's data.prefer" in capsys.readouterr().out


def test_absent_preferred_data_falls_back_to_the_default(tmp_path, capsys):
    recipe = load_recipe("medix_r1", check_trl=False)
    assert training_source(recipe, None, data_dir=str(tmp_path)) == DEFAULT_TRAIN_DATA == "vqa_rad"
    out = capsys.readouterr().out
    assert "training data: vqa_rad (medrl's default; none of the recipe's data.prefer ['medix_rl:train']" in out


def test_explicit_data_wins_and_prints_nothing(tmp_path, capsys):
    recipe = load_recipe("medix_r1", check_trl=False)
    medix_rl_data(tmp_path)
    assert training_source(recipe, "slake:train", data_dir=str(tmp_path)) == "slake:train"
    assert capsys.readouterr().out == ""
    plain = load_recipe("grpo", check_trl=False)  # no prefer: the default, said so
    assert training_source(plain, None, data_dir=str(tmp_path)) == "vqa_rad"
    assert "(medrl's default;" in capsys.readouterr().out


def test_prefer_names_registered_sources(tmp_path):
    with pytest.raises(RecipeError, match=r"data\.prefer.*'medix_rll:train' is not a named data source; "
                                          r"did you mean 'medix_rl'"):
        load_recipe("medix_r1", overrides=["data.prefer=[medix_rll:train]"], check_trl=False)
    with pytest.raises(RecipeError, match=r"data\.prefer.*jsonl:/hf: paths go to --data"):
        load_recipe("medix_r1", overrides=["data.prefer=['jsonl:/x.jsonl']"], check_trl=False)
