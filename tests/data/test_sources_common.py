"""medrl.data.sources._common: the helpers every source loader shares (hand-worked cases)."""

from __future__ import annotations

import json

import pytest

from medrl.data.record import DataError
from medrl.data.sources import _common as C


def test_mcq_record_follows_the_pmc_vqa_convention():
    r = C.mcq_record(rid="x", question=" Which organ? ", options=["liver", " spleen ", 3], answer_index=1, images=[],
                     split="test", source="s", modality="CT")
    assert r.question == "Which organ?\nA: liver\nB: spleen\nC: 3"
    assert (r.answer, r.answer_type, r.open_ended, r.modality_tag) == ("spleen", "CLOSED", False, "CT_SCAN")
    assert r.extras == {"lang": "en", "choices": ["liver", "spleen", "3"], "answer_label": "B",
                        "choices_in_prompt": True}
    same = C.mcq_record(rid="x", question="Q\nA: a\nB: b", options=["a", "b"], answer_index=0, images=[],
                        split=None, source="s", options_in_question=True)
    assert same.question == "Q\nA: a\nB: b"  # options already in the question are not repeated
    with pytest.raises(DataError, match=r"f:3: record 'x': answer index 2 outside 2 options"):
        C.mcq_record(rid="x", question="Q", options=["a", "b"], answer_index=2, images=[], split=None, source="s",
                     where="f:3")


def test_vqa_record_open_or_closed():
    r = C.vqa_record(rid="a", image="i.png", question=" Q? ", answer=4, split="test", source="s", where="w")
    assert (r.question, r.answer, r.answer_type, r.open_ended, r.images) == ("Q?", "4", "OPEN", True, ["i.png"])
    assert C.vqa_record(rid="a", image=None, question="Q", answer="yes", split=None, source="s",
                        where="w").answer_type == "CLOSED"
    forced = C.vqa_record(rid="a", image=None, question="Left or right?", answer="left", split=None, source="s",
                          where="w", closed=True)
    assert (forced.answer_type, forced.open_ended, forced.images) == ("CLOSED", False, [])
    with pytest.raises(DataError, match=r"w: record 'a': empty answer"):
        C.vqa_record(rid="a", image=None, question="Q", answer="  ", split=None, source="s", where="w")


@pytest.mark.parametrize("name, split", [
    ("train-00000-of-00001.parquet", "train"), ("validation.json", "validation"), ("valid.jsonl", "validation"),
    ("val.json", "validation"), ("dev.jsonl", "dev"), ("test_clean.csv", "test"), ("images", None),
])
def test_split_of_file_names(name, split):
    assert C.split_of(name) == split


def test_want_split_aliases():
    assert C.want_split(None, "anything")
    assert C.want_split("validate", "validation") and C.want_split("val", "valid")
    assert not C.want_split("validation", "dev")  # MMMU's dev is a few-shot set
    assert C.want_split("validation", "dev", dev_is_validation=True)  # MedQA / MedMCQA
    assert not C.want_split("test", "train")


def test_letter_index():
    assert C.letter_index("(b).", 4, "w") == 1 and C.letter_index(" d ", 4, "w") == 3
    with pytest.raises(DataError, match=r"w: answer label 'E' is not one of the 4 option letters"):
        C.letter_index("E", 4, "w")


def test_split_modality_tag():
    assert C.split_modality_tag("<X_RAY> pneumonia") == ("X_RAY", "pneumonia")
    assert C.split_modality_tag("< ct scan >a") == ("CT_SCAN", "a")
    assert C.split_modality_tag("<answer> x") == (None, "<answer> x")  # a format tag, not a modality
    assert C.split_modality_tag(" plain ") == (None, "plain")


def test_read_rows_json_forms(tmp_path):
    (tmp_path / "list.json").write_text(json.dumps([{"a": 1}]))
    (tmp_path / "map.json").write_text(json.dumps({"k1": {"a": 1}, "k2": 5}))
    (tmp_path / "lines.json").write_text('{"a": 1}\n{"a": 2}\n')  # MedMCQA ships JSON lines as .json
    (tmp_path / "scalar.json").write_text("3")
    (tmp_path / "bad.json").write_text("{oops")
    assert C.read_rows(tmp_path / "list.json") == [{"a": 1}]
    assert C.read_rows(tmp_path / "map.json") == [{"_key": "k1", "a": 1}, {"_key": "k2", "value": 5}]
    assert C.read_rows(tmp_path / "lines.json") == [{"a": 1}, {"a": 2}]
    with pytest.raises(DataError, match=r"scalar\.json: expected a JSON list or object"):
        C.read_rows(tmp_path / "scalar.json")
    with pytest.raises(DataError, match=r"bad\.json: cannot read \(JSONDecodeError"):
        C.read_rows(tmp_path / "bad.json")
    with pytest.raises(DataError, match=r"missing\.json: cannot read"):
        C.read_rows(tmp_path / "missing.json")


def test_need_and_folders(tmp_path):
    C.need({"q": "x"}, ["q"], "w")
    with pytest.raises(DataError, match=r"f line 2: field 'a' missing or empty"):
        C.need({"a": ""}, ["a"], "f line 2")
    (tmp_path / "B").mkdir()
    assert C.find_folder(tmp_path, ["A", "B"], "Set", "http://x") == (tmp_path / "B").resolve()
    with pytest.raises(DataError, match=r"Set not found under .*expected one of .*Get it from http://x"):
        C.find_folder(tmp_path, ["C"], "Set", "http://x")
    (tmp_path / "B" / "f.txt").write_text("")
    assert C.has_any("f.txt")(tmp_path / "B") and not C.has_any("g.txt")(tmp_path / "B")
    assert C.first_existing(tmp_path / "B", ["g.txt", "f.txt"], "Set") == tmp_path / "B" / "f.txt"
    with pytest.raises(DataError, match=r"Set: none of .*g\.txt"):
        C.first_existing(tmp_path / "B", ["g.txt"], "Set")


def test_image_paths(tmp_path):
    (tmp_path / "a.png").write_bytes(b"")
    assert C.image_in(tmp_path, "a") == str(tmp_path / "a.png")
    assert C.image_in(tmp_path, "zz") == str(tmp_path / "zz.jpg")  # left for validation to report
    assert C.image_file(tmp_path, "sub/x.png", "r1") == str(tmp_path / "sub" / "x.png")
    assert C.image_file(tmp_path, None, "r1") is None
    assert C.row_image(tmp_path, ["first.png", "second.png"], "r1") == str(tmp_path / "first.png")
    assert C.row_image(tmp_path, [], "r1") is None


def test_pipe_lines(tmp_path):
    f = tmp_path / "qa.txt"
    f.write_text("\ufeffsynpic1|what organ?|liver\n\n synpic2 | which plane | axial \n", encoding="utf-8")
    assert C.pipe_lines(f) == [(1, ["synpic1", "what organ?", "liver"]), (3, ["synpic2", "which plane", "axial"])]
    with pytest.raises(DataError, match="cannot read"):
        C.pipe_lines(tmp_path / "none.txt")


def test_parquet_rows_picks_the_split(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"q": ["a", "b"]}), tmp_path / "data" / "test-0.parquet")
    pq.write_table(pa.table({"q": ["c"]}), tmp_path / "data" / "train-0.parquet")
    picked = C.parquet_rows(tmp_path, "test", "Set")
    assert [(s, f.name, rows) for s, f, rows in picked] == [("test", "test-0.parquet", [{"q": "a"}, {"q": "b"}])]
    assert len(C.parquet_rows(tmp_path, None, "Set")) == 2
    with pytest.raises(DataError, match=r"Set: no 'validation' parquet file under .*\['test-0.parquet', "):
        C.parquet_rows(tmp_path, "validation", "Set")
