"""Data, images and concurrency on the failing inputs a new user met: a truncated JPEG, a
20000x20000 PNG bomb, a 12000x12000 PNG, an image path climbing out of the data folder (also with
--judge-images), VQA-RAD JSON with ``image_name`` as a list or no ``question``, a JSONL answer
that is an object, one file under two path spellings, two `medrl eval` on one --out, a 400 KB
question. Each must give a clear error naming file/record/field, be skippable where it is one
record, and lose no finished row."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from pathlib import Path

import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request
from PIL import Image

from medrl.cli import main
from medrl.data import load_records
from medrl.data.record import DataError


# --------------------------------------------------------------------------- fixtures
def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def big_png(path: Path, width: int, height: int, bit_depth: int = 8) -> Path:
    """A valid greyscale PNG of ``width`` x ``height`` black pixels written row by row (never
    held in memory); at 1 bit a 20000x20000 one is a few hundred KB, like the user's 390 KB file."""
    row = b"\x00" + bytes((width * bit_depth + 7) // 8)
    comp = zlib.compressobj(1)
    body = bytearray()
    for _ in range(height):
        body += comp.compress(row)
    body += comp.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", bytes(body))
                     + _png_chunk(b"IEND", b""))
    return path


def truncated_jpeg(path: Path) -> Path:
    img = Image.effect_noise((256, 256), 60).convert("RGB")
    img.save(path, format="JPEG", quality=95)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # the header parses; the scan data stops half-way
    return path


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    """A data folder in tmp_path (the configured data root) with two good scans."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("MEDRL_DATA_DIR", str(data))
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MEDRL_ALLOW_OUTSIDE_DATA_ROOT", raising=False)
    Image.new("RGB", (32, 32), (90, 90, 90)).save(data / "ct.png")
    Image.new("RGB", (32, 32), (30, 30, 30)).save(data / "mr.png")
    return data


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(rid, image, question="Which organ is shown?", answer="liver"):
    return {"id": rid, "images": [image], "question": question, "answer": answer}


@pytest.fixture()
def fake_model(monkeypatch, tmp_path):
    """`medrl eval` with a fake generator (records the ids it was asked to generate)."""
    import medrl.eval.runner as runner

    calls: list[str] = []

    def build(*a, **k):
        def gen(recs):
            calls.extend(r.id for r in recs)
            return [f"<think>The scan shows it.</think><answer>{r.answer}</answer>" for r in recs]
        return gen

    monkeypatch.setattr(runner, "build_generate_fn", build)
    return calls


@pytest.fixture(autouse=True)
def model_folder(tmp_path, monkeypatch, generation_faked_model):
    """A folder `--model` names (generation itself is faked)."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    monkeypatch.setattr(sys.modules[__name__], "MODEL", str(tmp_path / "model"))


MODEL = "model"


def _eval(data_spec, out, *extra):
    """`medrl eval` on ``data_spec``; returns the exit code (tests only tell 0 from an error: the
    exit-code table is medrl.common.exit_codes')."""
    specs = data_spec if isinstance(data_spec, list) else [data_spec]
    return main(["eval", "--model", MODEL, "--data", *specs, "--out", str(out), "--no-text-metrics",
                 "--bootstrap", "20", "--no-steps", "--max-new-tokens", "16", *extra])


def _keys(path: Path) -> list[str]:
    return [json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- images
def test_truncated_jpeg_is_a_skippable_record_error_and_reruns_continue(folder, tmp_path, fake_model, capsys):
    truncated_jpeg(folder / "cut.jpg")
    with Image.open(folder / "cut.jpg") as im:
        assert im.size == (256, 256)  # the header alone looks fine: only decoding finds it
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("cut", "cut.jpg"), _row("b", "mr.png")])
    with pytest.raises(DataError, match=r"record 'cut'.*cut\.jpg.*(truncated|does not decode)"):
        load_records(f"jsonl:{path}")
    report: dict = {}
    assert [r.id for r in load_records(f"jsonl:{path}", skip_invalid=True, report=report)] == ["a", "b"]
    assert report["invalid"] == 1 and "cut.jpg" in report["errors"][0] and "line 2" in report["errors"][0]

    out = tmp_path / "ev"
    assert _eval(f"jsonl:{path}", out) != 0
    err = capsys.readouterr().err
    assert "record 'cut'" in err and "cut.jpg" in err and "Traceback" not in err and not fake_model
    assert _eval(f"jsonl:{path}", out, "--skip-invalid") == 0
    assert fake_model == ["a", "b"] and _keys(out / "outputs.jsonl") == [f"jsonl:{path}:a", f"jsonl:{path}:b"]
    # the rerun skips the same record again and keeps every finished row without regenerating
    assert _eval(f"jsonl:{path}", out, "--skip-invalid") == 0
    assert fake_model == ["a", "b"] and len(_keys(out / "generations.jsonl")) == 2


def test_decode_results_are_cached_by_file_digest(folder, monkeypatch):
    import medrl.data.images as images

    truncated_jpeg(folder / "cut.jpg")
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("cut", "cut.jpg"), _row("b", "ct.png")])
    decoded: list[str] = []
    real = images.decode_problem
    monkeypatch.setattr(images, "decode_problem", lambda p: decoded.append(str(p)) or real(p))
    load_records(f"jsonl:{path}", skip_invalid=True)
    assert sorted(Path(p).name for p in decoded) == ["ct.png", "cut.jpg"]  # each distinct file once
    monkeypatch.setattr(images, "_CACHE", None)  # a new process: read back from the cache file
    decoded.clear()
    report: dict = {}
    assert [r.id for r in load_records(f"jsonl:{path}", skip_invalid=True, report=report)] == ["a", "b"]
    assert decoded == [] and report["invalid"] == 1  # nothing decoded again, same verdicts
    (folder / "cut.jpg").write_bytes((folder / "ct.png").read_bytes())  # the file is fixed: new digest
    assert len(load_records(f"jsonl:{path}")) == 3 and [Path(p).name for p in decoded] == []  # ct.png bytes known


def test_decompression_bomb_names_the_record_and_is_skipped(folder, tmp_path, fake_model, capsys):
    bomb = big_png(folder / "bomb.png", 20000, 20000, bit_depth=1)
    assert bomb.stat().st_size < 400_000
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("bomb", "bomb.png")])
    with pytest.raises(DataError, match=r"record 'bomb'.*bomb\.png.*decompression bomb"):
        load_records(f"jsonl:{path}")
    report: dict = {}
    assert [r.id for r in load_records(f"jsonl:{path}", skip_invalid=True, report=report)] == ["a"]
    out = tmp_path / "ev"
    assert _eval(f"jsonl:{path}", out, "--skip-invalid") == 0
    err = capsys.readouterr().err
    assert "skipped 1 invalid record(s), kept 1" in err and "bomb.png" in err and "Traceback" not in err
    assert fake_model == ["a"]


def test_image_over_the_pixel_cap_is_downscaled_before_the_processor(folder, tmp_path):
    from medrl.data.images import DEFAULT_MAX_PIXELS, open_image

    big = big_png(folder / "big.png", 12000, 12000)
    assert load_records(f"jsonl:{_jsonl(folder / 's.jsonl', [_row('big', 'big.png')])}")[0].id == "big"
    assert 12000 * 12000 > DEFAULT_MAX_PIXELS
    # in a fresh process, to measure its peak memory: the generation code's image under a cap set
    # in the environment (MediX-R1's max_pixels, 4,194,304)
    def peak(path) -> tuple[int, int, str, int]:
        code = textwrap.dedent(f"""
            import resource
            from medrl.data import VQARecord
            from medrl.models.generation import to_chat
            _, (img,) = to_chat(VQARecord(id="x", images=[{str(path)!r}], question="Which organ?", answer="liver"))
            print(img.size[0], img.size[1], img.mode, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
        """)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                             env={**os.environ, "MEDRL_MAX_PIXELS": "4194304"})
        assert res.returncode == 0, res.stderr[-2000:]
        w, h, mode, mb = res.stdout.split()
        return int(w), int(h), mode, int(mb)

    w, h, mode, peak_mb = peak(big)
    assert 4_000_000 < w * h <= 4_194_304 and w == h and mode == "RGB"
    # measured against the same process opening a small image (imports alike), in this run: the
    # 12000x12000 RGB alone is 412 MB; through a processor it took 2.4 GB before the cap
    base_mb = peak(folder / "ct.png")[3]
    assert peak_mb - base_mb < 400, (peak_mb, base_mb)
    assert open_image(folder / "ct.png").size == (32, 32)  # small images are untouched


def test_image_path_outside_the_data_root_is_refused_and_never_sent_to_the_judge(folder, tmp_path, fake_model,
                                                                                  capsys):
    from medrl.judges.server import serve_in_thread

    secret = tmp_path / "private"
    secret.mkdir()
    Image.new("RGB", (32, 32), (250, 10, 10)).save(secret / "face.png")
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("climb", "../private/face.png")])
    with pytest.raises(DataError, match=r"set\.jsonl:2 \(id 'climb'\).*outside the data root.*--allow-outside-data-root"):
        load_records(f"jsonl:{path}")
    assert [r.id for r in load_records(f"jsonl:{path}", skip_invalid=True)] == ["a"]
    from medrl.data.images import allow_outside_data_root

    with allow_outside_data_root():
        assert [r.id for r in load_records(f"jsonl:{path}")] == ["a", "climb"]

    app = FastAPI()
    bodies: list[str] = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        bodies.append((await request.body()).decode())
        return chat_completion('{"score": 1}' if "score" in bodies[-1] else "YES")

    out = tmp_path / "ev"
    with serve_in_thread(app) as url:
        judge = ["--judge", "openai:m", "--judge-base-url", url, "--judge-images", "--judge-cache",
                 str(tmp_path / "c.sqlite"), "--judge-api-key-env", "MEDRL_NO_KEY"]
        assert _eval(f"jsonl:{path}", out, *judge) != 0
        err = capsys.readouterr().err
        assert "outside the data root" in err and "climb" in err
        assert _eval(f"jsonl:{path}", out, *judge, "--skip-invalid") == 0
    assert fake_model == ["a"]
    sent = [b for b in bodies if "image_url" in b]
    assert sent  # the record inside the root went with its image
    from medrl.judges.openai_judge import image_data_url

    face = image_data_url(str(secret / "face.png")).split(",", 1)[1]
    assert any(image_data_url(str(folder / "ct.png")).split(",", 1)[1] in b for b in sent)
    assert not any(face in b for b in bodies)


def test_vqa_rad_image_path_climbing_out_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    root = _vqa_rad(tmp_path / "data", [
        {"qid": 1, "image_name": "synpic1.jpg", "question": "Which organ?", "answer": "liver"},
        {"qid": 2, "image_name": "../../secret.jpg", "question": "Which organ?", "answer": "liver"},
    ])
    Image.new("RGB", (32, 32)).save(tmp_path / "secret.jpg")
    with pytest.raises(DataError, match=r"record #1 \(qid 2\).*outside the data root"):
        load_records("vqa_rad", split="test", data_dir=root.parent)
    assert [r.id for r in load_records("vqa_rad", split="test", data_dir=root.parent, skip_invalid=True)] == ["vqa_rad-1"]


# --------------------------------------------------------------------------- records
def _vqa_rad(data: Path, rows: list[dict]) -> Path:
    root = data / "vqa_rad"
    (root / "VQA_RAD Image Folder").mkdir(parents=True)
    Image.new("RGB", (32, 32), (60, 60, 60)).save(root / "VQA_RAD Image Folder" / "synpic1.jpg")
    full = [{"phrase_type": "test_freeform", "answer_type": "OPEN", "image_organ": "ABD", "question_type": "ORGAN",
             **r} for r in rows]
    (root / "VQA_RAD Dataset Public.json").write_text(json.dumps(full), encoding="utf-8")
    return root


def test_vqa_rad_image_name_as_a_list_names_file_record_and_field(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    root = _vqa_rad(tmp_path / "data", [
        {"qid": 1, "image_name": "synpic1.jpg", "question": "Which organ?", "answer": "liver"},
        {"qid": 2, "image_name": ["synpic1.jpg", "synpic2.jpg"], "question": "Which organ?", "answer": "liver"},
    ])
    with pytest.raises(DataError, match=r"VQA_RAD Dataset Public\.json record #1 \(qid 2\): field 'image_name' "
                                        r"must be one image file name, got list"):
        load_records("vqa_rad", split="test", data_dir=root.parent)
    report: dict = {}
    recs = load_records("vqa_rad", split="test", data_dir=root.parent, skip_invalid=True, report=report)
    assert [r.id for r in recs] == ["vqa_rad-1"] and report["invalid"] == 1


def test_vqa_rad_missing_question_is_skippable(tmp_path, monkeypatch, fake_model, capsys):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    root = _vqa_rad(tmp_path / "data", [
        {"qid": 1, "image_name": "synpic1.jpg", "question": "Which organ?", "answer": "liver"},
        {"qid": 2, "image_name": "synpic1.jpg", "answer": "liver"},
        {"qid": 3, "image_name": "synpic1.jpg", "question": "Which side?", "answer": "left"},
    ])
    with pytest.raises(DataError, match=r"record #1 \(qid 2\): field 'question' missing"):
        load_records("vqa_rad", split="test", data_dir=root.parent)
    out = tmp_path / "ev"
    assert _eval("vqa_rad:test", out, "--data-dir", str(root.parent)) != 0
    assert "field 'question' missing" in capsys.readouterr().err
    assert _eval("vqa_rad:test", out, "--data-dir", str(root.parent), "--skip-invalid") == 0
    err = capsys.readouterr().err
    assert "skipped 1 invalid record(s), kept 2" in err and "qid 2" in err
    assert fake_model == ["vqa_rad-1", "vqa_rad-3"]


def test_slake_malformed_fields_name_file_and_record(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRL_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "data" / "slake"
    (root / "imgs" / "xmlab1").mkdir(parents=True)
    Image.new("RGB", (32, 32)).save(root / "imgs" / "xmlab1" / "source.jpg")
    base = {"img_name": "xmlab1/source.jpg", "q_lang": "en", "modality": "CT", "location": "Abdomen"}
    rows = [{**base, "qid": 1, "question": "Which organ?", "answer": "Liver"},
            {**base, "qid": 2, "question": "Which organ?", "answer": {"text": "Liver"}},
            {**base, "qid": 3, "answer": "Liver"}]
    (root / "test.json").write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"test\.json record #1: field 'answer' is a JSON object"):
        load_records("slake", split="test", data_dir=root.parent)
    report: dict = {}
    assert [r.id for r in load_records("slake", split="test", data_dir=root.parent, skip_invalid=True,
                                       report=report)] == ["slake-1"]
    assert report["invalid"] == 2 and "record #2: field 'question' missing" in report["errors"][1]


def test_jsonl_answer_that_is_an_object_names_the_line(folder):
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("obj", "ct.png", answer={"text": "yes"}),
                                         _row("b", "ct.png", answer=["left", "right"])])
    with pytest.raises(DataError, match=r"set\.jsonl:2 \(id 'obj'\): field 'answer' is a JSON object "
                                        r"\(\{'text': 'yes'\}\)"):
        load_records(f"jsonl:{path}")
    report: dict = {}
    recs = load_records(f"jsonl:{path}", skip_invalid=True, report=report)
    assert [r.id for r in recs] == ["a"] and report["invalid"] == 2
    assert "set.jsonl:3" in report["errors"][1] and "is a list" in report["errors"][1]
    assert all("{'text'" not in r.answer for r in recs)


def test_one_file_under_two_spellings_is_refused_as_a_duplicate_source(folder, tmp_path, fake_model, capsys):
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png")])
    (folder / "sub").mkdir()
    os.symlink(path, folder / "link.jsonl")
    out = tmp_path / "ev"
    for other in (f"jsonl:{folder}/sub/../set.jsonl", f"jsonl:{folder / 'link.jsonl'}"):
        assert _eval([f"jsonl:{path}", other], out) != 0
        err = capsys.readouterr().err
        assert "duplicate source" in err and str(path) in err and "Traceback" not in err
    assert fake_model == []
    assert _eval([f"jsonl:{path}"], out) == 0 and fake_model == ["a"]


def test_overlong_question_is_a_skippable_record_error(folder, tmp_path, fake_model, capsys):
    huge = "Which organ is shown in this image? " * 11_400  # ~400 KB
    assert len(huge) > 400_000
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("huge", "ct.png", question=huge),
                                         _row("b", "mr.png")])
    out = tmp_path / "ev"
    t = time.perf_counter()
    assert _eval(f"jsonl:{path}", out) != 0
    err = capsys.readouterr().err
    assert "record 'huge'" in err and "characters, over the limit" in err and "line 2" in err
    assert _eval(f"jsonl:{path}", out, "--skip-invalid") == 0
    assert fake_model == ["a", "b"] and time.perf_counter() - t < 30


def test_policy_prompt_length_guard_names_the_record_before_generating():
    """The token guard of the policy side: a prompt over the model's context (minus
    max_new_tokens) stops with the record named; nothing of its batch is generated."""
    import torch

    from medrl.data import VQARecord
    from medrl.models.generation import PromptTooLongError, generate, max_prompt_tokens_of

    class Tok:
        pad_token, eos_token, pad_token_id, padding_side = "<pad>", "<eos>", 0, "left"

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": text.split()}

    class Proc:
        tokenizer = Tok()

        def apply_chat_template(self, messages, **kw):
            return " ".join(p.get("text", "") for m in messages for p in (m["content"] if isinstance(m["content"], list)
                                                                          else [{"text": m["content"]}]))

    class Cfg:
        max_position_embeddings = 4096

    class Model(torch.nn.Module):
        config = Cfg()

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(1, 1)
            self.generated = 0

        def generate(self, **kw):  # pragma: no cover - must not be reached
            self.generated += 1
            raise AssertionError("generated on an overlong prompt")

    model = Model()
    assert max_prompt_tokens_of(model, 512) == 3584
    recs = [VQARecord(id="short", images=[], question="Which organ?", answer="liver"),
            VQARecord(id="huge", images=[], question="organ " * 70_000, answer="liver")]
    t = time.perf_counter()
    with pytest.raises(PromptTooLongError, match=r"record 'huge': prompt is 70,0\d\d tokens, over the limit of 3,584"):
        generate(model, Proc(), recs, max_new_tokens=512, progress=False)
    assert model.generated == 0 and time.perf_counter() - t < 5
    with pytest.raises(PromptTooLongError, match="over the limit of 100"):
        generate(model, Proc(), recs, max_prompt_tokens=100, progress=False)


# --------------------------------------------------------------------------- locks
def test_second_writer_is_refused_with_the_holders_pid(folder, tmp_path, fake_model, capsys):
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("b", "mr.png")])
    out = tmp_path / "ev"
    assert _eval(f"jsonl:{path}", out) == 0
    before = (out / "outputs.jsonl").read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom medrl.common.runlock import run_lock\n"
         f"with run_lock({str(out)!r}, 'medrl eval'):\n    print('locked', flush=True)\n    sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t = time.perf_counter()
        assert _eval(f"jsonl:{path}", out, "--overwrite") != 0
        err = capsys.readouterr().err
        assert f"PID {holder.pid}" in err and "being written by another process" in err
        assert time.perf_counter() - t < 10  # refused at once, not after waiting
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert (out / "outputs.jsonl").read_bytes() == before  # --overwrite did not touch the holder's rows
    assert fake_model == ["a", "b"]


def test_two_evals_on_one_out_generate_each_record_once(folder, tmp_path, monkeypatch, capsys):
    import medrl.eval.runner as runner

    path = _jsonl(folder / "set.jsonl", [_row(f"r{i}", "ct.png") for i in range(4)])
    started, release = threading.Event(), threading.Event()
    generated: list[str] = []

    def build(*a, **k):
        def gen(recs):
            started.set()
            release.wait(30)
            generated.extend(r.id for r in recs)
            return [f"<answer>{r.answer}</answer>" for r in recs]
        return gen

    monkeypatch.setattr(runner, "build_generate_fn", build)
    out = tmp_path / "ev"
    codes: list[int] = []
    first = threading.Thread(target=lambda: codes.append(_eval(f"jsonl:{path}", out)))
    first.start()
    assert started.wait(30)
    second = _eval(f"jsonl:{path}", out)  # while the first is generating
    release.set()
    first.join(60)
    assert second != 0 and codes == [0]
    assert "being written by another process" in capsys.readouterr().err
    keys = _keys(out / "generations.jsonl")
    assert sorted(generated) == ["r0", "r1", "r2", "r3"] and len(keys) == len(set(keys)) == 4
    scored = {json.loads(l)["key"]: json.loads(l) for l in (out / "outputs.jsonl").read_text().splitlines()}
    gens = {json.loads(l)["key"]: json.loads(l) for l in (out / "generations.jsonl").read_text().splitlines()}
    assert all(scored[k]["output"] == gens[k]["output"] for k in gens)
    assert not (out / ".medrl.lock.json").exists()  # the holder's note is gone with the lock


@pytest.mark.parametrize("command", ["train", "sft"])
def test_train_and_sft_refuse_a_run_folder_being_written(folder, tmp_path, capsys, command, monkeypatch):
    import medrl.models.loading as loading
    from medrl.common.runlock import run_lock

    def never(*a, **k):
        raise AssertionError("the model was loaded for a run folder another process holds")

    monkeypatch.setattr(loading, "load_policy", never)  # refused before anything heavy starts
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png")])
    out = tmp_path / "run"
    recipe = "mrpo" if command == "train" else "sft"
    with run_lock(out, f"medrl {command}"):
        rc = main([command, "--recipe", recipe, "--model", MODEL, "--data", f"jsonl:{path}", "--out", str(out)])
        assert rc == 6  # Exit.LOCKED
    err = capsys.readouterr().err
    assert f"PID {os.getpid()}" in err and "being written by another process" in err
    assert sorted(p.name for p in out.iterdir()) == [".medrl.lock"]  # nothing of the run written


def test_training_dataset_gets_images_under_the_recipe_cap(folder):
    """to_hf_dataset (what TRL decodes during training) holds a downscaled copy of an image over
    the cap (ARMed's 401,408 pixels here) and the original path of every other image."""
    from medrl.data.hf import to_hf_dataset

    Image.new("RGB", (1600, 1200), (120, 40, 40)).save(folder / "xray.png")
    path = _jsonl(folder / "set.jsonl", [_row("big", "xray.png"), _row("small", "ct.png")])
    ds = to_hf_dataset(load_records(f"jsonl:{path}"), max_pixels=401_408)
    big, small = ds[0]["image"], ds[1]["image"]
    assert big.size[0] * big.size[1] <= 401_408 and abs(big.size[0] / big.size[1] - 4 / 3) < 0.01
    assert small.size == (32, 32)
    assert to_hf_dataset(load_records(f"jsonl:{path}"))[0]["image"].size == (1600, 1200)  # under the default cap


@pytest.mark.slow
def test_overlong_question_with_the_tiny_model_stops_before_generating(folder, tmp_path, monkeypatch, capsys):
    """The user's case end to end: the tiny model, a 400 KB question let through validation
    (limit raised): the policy-side guard names the record in seconds instead of generating for
    minutes, and the record generated before it is kept."""
    from medrl.models import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "tiny", hidden_size=32, num_layers=1)
    monkeypatch.setenv("MEDRL_MAX_QUESTION_CHARS", "10000000")
    huge = "Which organ is shown in this image? " * 11_400
    path = _jsonl(folder / "set.jsonl", [_row("a", "ct.png"), _row("huge", "ct.png", question=huge)])
    out = tmp_path / "ev"
    t = time.perf_counter()
    rc = main(["eval", "--model", str(model), "--data", f"jsonl:{path}", "--out", str(out), "--no-text-metrics",
               "--no-steps", "--bootstrap", "20", "--max-new-tokens", "8", "--batch-size", "1"])
    took = time.perf_counter() - t
    err = capsys.readouterr().err
    assert rc != 0 and "record 'huge'" in err and "tokens, over the limit of" in err, err[-2000:]
    assert took < 60, took
    assert _keys(out / "generations.jsonl") == [f"jsonl:{path}:a"]  # the finished row is kept


def test_validation_refuses_images_outside_the_roots_a_loader_names(folder, tmp_path):
    """Any loader can pass its dataset folder to validation (``roots``): an image climbing out
    of it is one invalid record, skippable, and never decoded."""
    from medrl.data import VQARecord
    from medrl.data.validate import validate_records

    outside = tmp_path / "elsewhere.png"
    Image.new("RGB", (8, 8)).save(outside)
    recs = [VQARecord(id="in", images=[str(folder / "ct.png")], question="Which organ?", answer="liver"),
            VQARecord(id="out", images=[str(folder / ".." / "elsewhere.png")], question="Which organ?",
                      answer="liver")]
    with pytest.raises(DataError, match=r"pmc_vqa in .*record 'out': image path .* outside the data root"):
        validate_records(recs, where=f"pmc_vqa in {folder}", roots=[folder])
    report: dict = {}
    assert [r.id for r in validate_records(recs, roots=[folder], skip_invalid=True, report=report)] == ["in"]
    assert report["invalid"] == 1
    assert len(validate_records(recs)) == 2  # no roots given: the loader's own checks apply
