"""Multimodal judging (issue 10 item 5) against a local fake OpenAI-compatible server: the
record's image arrives as a base64 JPEG ``image_url`` part, downscaled to the configured longest
side, in answer-correctness, grade and step requests when images are on; never in consistency
requests; absent when off; the cache keeps the two apart; a judge that cannot take images fails
at start."""

from __future__ import annotations

import base64
import io
import re

import pytest
from fake_openai import chat_completion
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from PIL import Image

from medrl.judges import build_judge, run_sync
from medrl.judges.base import require_image_support
from medrl.judges.factory import resolve_images
from medrl.judges.server import serve_in_thread

FAST = dict(timeout=2, max_retries=1, backoff=0.01, max_backoff=0.05)


def _fake_app(refuse_images: bool = False):
    app = FastAPI()
    app.state.bodies = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        app.state.bodies.append(body)
        content = body["messages"][-1]["content"]
        has_image = isinstance(content, list) and any(p.get("type") == "image_url" for p in content)
        if refuse_images and has_image:
            return JSONResponse({"error": {"message": "this model does not accept images"}}, status_code=400)
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        if "TASK: verify_steps" in text:
            n = len(re.findall(r"^\[\d+\]", text, re.MULTILINE))
            reply = '{"steps": [' + ",".join(
                f'{{"step": {k}, "gold_alignment": 1, "answer_contribution": 1, "reason": "ok"}}'
                for k in range(1, n + 1)) + "]}"
        elif "TASK: grade" in text:
            reply = '{"score": 1}'
        else:
            reply = "YES"
        return chat_completion(reply, body["model"])

    return app


@pytest.fixture(scope="module")
def fake():
    app = _fake_app()
    with serve_in_thread(app) as url:
        yield url, app


@pytest.fixture()
def image_file(tmp_path):
    p = tmp_path / "scan.png"
    Image.new("RGB", (1200, 900), (40, 80, 120)).save(p)
    return p


def _images_of(body) -> list[Image.Image]:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return []
    out = []
    for part in content:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith("data:image/jpeg;base64,"), url[:40]
            img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            assert img.format == "JPEG"
            out.append(img)
    return out


def _ask_all(j, image):
    # "left kidney, enlarged" is correct by the answer structure but not identical to the reference, so the
    # judge is asked (an identical answer is settled without a request)
    async def go():
        return [
            await j.answer_correct("Where is the mass?", "Left kidney", "left kidney, enlarged", image=image),
            await j.verify_steps("Where is the mass?", "Left kidney",
                                 ["The scan is an axial CT of the abdomen.", "A mass sits in the left kidney."],
                                 evidence={"modality": "CT"}, image=image),
            await j.grade("Where is the mass?", "Left kidney", "left kidney", image=image),
            await j.consistency("Where is the mass?", "A mass sits in the left kidney.", "left kidney"),
        ]
    return run_sync(go())


def test_images_on_arrive_downscaled_in_answer_step_and_grade_requests(fake, image_file, tmp_path):
    url, app = fake
    app.state.bodies.clear()
    j = build_judge("openai:vlm", base_url=url, cache_path=str(tmp_path / "c.sqlite"), images=True,
                    image_max_side=256, **FAST)
    v = _ask_all(j, str(image_file))
    assert all(x.scored for x in v), [x.error for x in v]
    tasks = {}
    for b in app.state.bodies:
        c = b["messages"][-1]["content"]
        text = c if isinstance(c, str) else c[0]["text"]
        tasks[re.search(r"TASK: (\w+)", text).group(1)] = _images_of(b)
    for task in ("answer_correct", "verify_steps", "grade"):
        assert len(tasks[task]) == 1, task
        assert max(tasks[task][0].size) <= 256 and tasks[task][0].size == (256, 192)
    assert tasks["consistency"] == []  # CAPO's consistency check stays text only
    j.close()


def test_images_off_sends_text_only_and_cache_separates(fake, image_file, tmp_path):
    url, app = fake
    cache = str(tmp_path / "c.sqlite")
    app.state.bodies.clear()
    off = build_judge("openai:vlm", base_url=url, cache_path=cache, **FAST)
    assert not off.images
    _ask_all(off, str(image_file))
    assert app.state.bodies and all(_images_of(b) == [] for b in app.state.bodies)
    assert all(isinstance(b["messages"][-1]["content"], str) for b in app.state.bodies)
    n_off = len(app.state.bodies)
    off.close()
    # same cache file, images on: nothing comes from the text-only entries
    on = build_judge("openai:vlm", base_url=url, cache_path=cache, images=True, **FAST)
    _ask_all(on, str(image_file))
    assert on.stats.cache_hits == 1  # only the text-only consistency request
    assert len(app.state.bodies) == n_off + 3
    # another image is another key; the same image again is a hit
    other = tmp_path / "other.png"
    Image.new("RGB", (300, 300), (200, 10, 10)).save(other)
    run_sync(on.answer_correct("Where is the mass?", "Left kidney", "left kidney, enlarged", image=str(other)))
    assert len(app.state.bodies) == n_off + 4
    run_sync(on.answer_correct("Where is the mass?", "Left kidney", "left kidney, enlarged", image=str(image_file)))
    assert len(app.state.bodies) == n_off + 4 and on.stats.cache_hits == 2
    on.close()


def test_image_forms_and_missing_image(fake, image_file, tmp_path):
    url, app = fake
    j = build_judge("openai:vlm", base_url=url, cache_path=":memory:", images=True, **FAST)
    img = Image.open(image_file)
    for form in (img, image_file.read_bytes(), {"bytes": image_file.read_bytes()}, {"path": str(image_file)},
                 [str(image_file)]):
        app.state.bodies.clear()
        v = run_sync(j.answer_correct("q?", "Left kidney", "left kidney, enlarged", image=form))
        assert v.scored
        got = _images_of(app.state.bodies[-1]) if app.state.bodies else None
        assert got is None or (len(got) == 1 and max(got[0].size) <= 768)
    # a missing image file: this item is unscored, naming the file; nothing raises
    v = run_sync(j.answer_correct("q?", "Left kidney", "left kidney, enlarged", image=str(tmp_path / "gone.png")))
    assert not v.scored and "gone.png" in v.error
    j.close()


def test_a_judge_that_cannot_take_images_fails_at_start(image_file):
    with pytest.raises(ValueError, match="reference.*text only"):
        build_judge("reference", images=True)
    ref = build_judge("reference")
    with pytest.raises(ValueError, match="cannot take images"):
        require_image_support(ref)
    # the reference judge ignores an image passed per call (text only by design)
    assert run_sync(ref.answer_correct("q", "Lung", "lung", image=str(image_file))).value is True
    assert resolve_images("openai:m", "auto") and not resolve_images("reference", "auto")
    assert not resolve_images("openai:m", False) and resolve_images("reference", True)
    with pytest.raises(ValueError):
        resolve_images("openai:m", "maybe")


def test_endpoint_refusing_images_fails_at_start(tmp_path):
    with serve_in_thread(_fake_app(refuse_images=True)) as url:
        off = build_judge("openai:textonly", base_url=url, cache_path=":memory:", **FAST)
        with pytest.raises(ValueError, match="without images=True"):
            require_image_support(off)
        off.close()
        on = build_judge("openai:textonly", base_url=url, cache_path=":memory:", images=True, **FAST)
        with pytest.raises(ValueError, match="refused a request with an image"):
            require_image_support(on)
        on.close()


def test_recipe_key_and_train_flag_fail_at_start(tmp_path, capsys):
    from medrl.cli import main
    from medrl.train.recipes import RecipeError, load_recipe

    assert load_recipe("mrpo").judge == {"images": "auto", "image_max_side": 768}
    assert load_recipe("grpo").judge["images"] is False
    assert load_recipe("grpo", overrides=["judge.images=true"]).judge["images"] is True
    with pytest.raises(RecipeError, match="judge.images"):
        load_recipe("grpo", overrides=["judge.images=maybe"])
    with pytest.raises(RecipeError, match="image_max_side"):
        load_recipe("grpo", overrides=["judge.image_max_side=2"])
    Image.new("RGB", (32, 32)).save(tmp_path / "ct.png")
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "images": ["ct.png"], "question": "Which organ?", "answer": "liver"}\n')
    rc = main(["train", "--recipe", "mrpo", "--model", "tiny", "--data", f"jsonl:{data}", "--judge", "reference",
               "--judge-images", "--out", str(tmp_path / "run"), "--profile", "cpu"])
    assert rc == 2 and "reads text only" in capsys.readouterr().err


def test_eval_passes_the_record_image_to_the_judge(fake, tmp_path):
    from medrl.data import VQARecord
    from medrl.eval.runner import EvalDataset, run_eval

    url, app = fake
    Image.new("RGB", (1000, 500), (10, 120, 30)).save(tmp_path / "x.png")
    recs = [VQARecord(id="r0", images=[str(tmp_path / "x.png")], question="Which organ?", answer="liver",
                      answer_type="OPEN", open_ended=True)]
    gen = lambda rs: ["<think>The scan is a CT. The liver is enlarged.</think><answer>liver</answer>" for _ in rs]  # noqa: E731
    for images in (False, True):
        app.state.bodies.clear()
        j = build_judge("openai:vlm", base_url=url, cache_path=":memory:", images=images, image_max_side=300, **FAST)
        m = run_eval([EvalDataset("toy:test", recs)], gen, j, tmp_path / f"ev{images}", text_metrics=False,
                     n_boot=20, progress=False, model="fake")
        j.close()
        assert m["datasets"]["toy:test"]["metrics"]["judge_binary"]["mean"] == 1.0
        sizes = [img.size for b in app.state.bodies for img in _images_of(b)]
        assert sizes == ([(300, 150), (300, 150)] if images else [])  # grade + step requests
        assert m["config"]["judge"]["images"] is images
