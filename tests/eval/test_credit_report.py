"""``medrl analyze credit``: the token-credit report from credit.jsonl rows (no model needed):
the e^(1-p) profile of MRPO's invalid steps, GRPO's constant rows, the shared colour scale,
side-by-side pairing, bad input, the CLI and a headless-Chromium screenshot of the shaded text."""

from __future__ import annotations

import json
import math
import re

import pytest

from medrl.advantages import mrpo_token_advantages
from medrl.eval.credit_report import (
    color_scale,
    credit_report,
    load_credit,
    position_profile,
    select_prompts,
    token_color,
)
from medrl.common.jsonl import write_jsonl
from medrl.answers.completion import completion_steps, step_token_spans
from medrl.train.credit import rollout_row

STEPS = ["The film is a chest X-ray.", "Let me think about this.", "The heart looks large.",
         "So the answer follows."]


def _row(estimator: str, step: int, rollout: int, record: str, answer: str, a_i: float, valid: list[bool],
         r_ans: float) -> dict:
    """A credit row the way the trainer writes it: whitespace tokens, steps from the text, token
    advantages from the real MRPO function (or A_i repeated for GRPO)."""
    text = f"<think>{' '.join(STEPS[:len(valid)])}</think><answer>{answer}</answer>"
    offsets = [(m.start(), m.end()) for m in re.finditer(r"\s*\S+", text)]
    steps = completion_steps(text)
    spans = step_token_spans(text, steps, offsets)
    if estimator == "mrpo":
        adv = mrpo_token_advantages([a_i], [r_ans], [valid], [spans], len(offsets))[0].tolist()
    else:
        adv = [a_i] * len(offsets)
    return rollout_row(text=text, offsets=offsets, token_advantages=adv, advantage=a_i, steps=steps,
                       step_token_spans=spans, step_valid=valid, rewards={"mrpo_answer": r_ans}, r_ans=r_ans,
                       step=step, estimator=estimator, tau=0.6, rollout=rollout, group=0, record_id=record,
                       question=f"question of {record}?", reference="cardiomegaly")


def _runs(tmp_path):
    out = {}
    for est in ("grpo", "mrpo"):
        rows = [
            _row(est, 1, 0, "r1", "cardiomegaly", 0.8, [True, True, True], 1.0),
            _row(est, 1, 1, "r1", "banana", -0.8, [True, False, True, False], 0.0),   # K = 4
            _row(est, 1, 2, "r2", "pneumonia", -0.5, [False, True, False], 0.1),       # K = 3
            _row(est, 11, 0, "r3" if est == "grpo" else "r4", "x", -0.3, [False], 0.0),  # K = 1; only in one run
        ]
        (tmp_path / est).mkdir()
        write_jsonl(tmp_path / est / "credit.jsonl", rows)
        out[est] = rows
    return out


def test_mrpo_invalid_steps_follow_exp_one_minus_p_and_grpo_is_flat(tmp_path):
    runs = _runs(tmp_path)
    prof = position_profile(runs["mrpo"])
    inv = sorted((round(q["p"], 4), round(q["scaled"], 4)) for q in prof["points"] if q["valid"] is False)
    # hand-worked: K=4 steps 2 and 4 -> p 1/3, 1; K=3 steps 1, 3 -> p 0, 1; K=1 -> p 0
    # -e^(1-p): p=0 -> -2.7183, p=1/3 -> -e^(2/3) = -1.9477, p=1 -> -1.0; a single step (K=1) is
    # penalised by 1 x |A_i| as in the released MRPO code (docs/papers/mrpo.md)
    assert inv == [(0.0, -2.7183), (0.0, -1.0), (0.3333, -1.9477), (1.0, -1.0), (1.0, -1.0)]
    val = {round(q["scaled"], 6) for q in prof["points"] if q["valid"] is True}
    assert val == {1.0}  # valid steps of wrong answers: +|A_i|
    first_bin = prof["bins"][0]
    assert first_bin["n_invalid"] == 2 and first_bin["invalid_scaled"] == pytest.approx((-math.e - 1.0) / 2)
    # raw mean token advantage in [0, 0.2): K=4 step 1 valid (+0.8), K=3 step 1 (-e * 0.5), K=1 (-1 * 0.3)
    assert first_bin["mean"] == pytest.approx((0.8 - math.e * 0.5 - 0.3) / 3, rel=1e-5)
    g = position_profile(runs["grpo"])
    assert {round(q["scaled"], 6) for q in g["points"]} == {-1.0}  # every token of a wrong rollout: A_i < 0
    assert all(len(set(r["token_advantages"])) == 1 for r in runs["grpo"])
    # right answers (R_ans > tau) are not part of the profile
    assert len(g["points"]) == 4 + 3 + 1


def test_shared_colour_scale_and_diverging_colours(tmp_path):
    runs = _runs(tmp_path)
    vmax = color_scale(runs)
    assert vmax == pytest.approx(math.exp(2 / 3) * 0.8, rel=1e-6)  # MRPO, K=4 row, invalid step 2 (p = 1/3)
    assert token_color(0.0, 2.0) == "rgb(255,255,255)"
    # 80% of the way to the base colours: 255 + (215-255)*0.8 = 223, 255 + (48-255)*0.8 = 89.4, ...
    assert token_color(-2.0, 2.0) == "rgb(223,89,82)" and token_color(-9.0, 2.0) == "rgb(223,89,82)"
    assert token_color(2.0, 2.0) == "rgb(77,133,189)"


def test_same_prompt_in_two_runs_is_paired_side_by_side(tmp_path):
    runs = _runs(tmp_path)
    items = select_prompts(runs, max_prompts=10)
    keys = [(i["key"], i["paired"], i["step"]) for i in items]
    assert keys[:2] == [("r1", True, 1), ("r2", True, 1)] and {k for k, *_ in keys[2:]} == {"r3", "r4"}
    assert set(items[0]["runs"]) == {"grpo", "mrpo"} and len(items[0]["runs"]["mrpo"]) == 2
    one = select_prompts(runs, max_prompts=1, max_rollouts=1)
    assert len(one) == 1 and [r["rollout"] for r in one[0]["runs"]["mrpo"]] == [1]  # the wrong answer first


def test_report_files_and_cli(tmp_path, capsys):
    from medrl.cli import main

    _runs(tmp_path)
    summary = credit_report([tmp_path / "grpo", tmp_path / "mrpo"], tmp_path / "rep", names=["GRPO", "MRPO"])
    assert summary["runs"]["MRPO"]["rows"] == 4 and summary["runs"]["MRPO"]["steps_logged"] == [1, 11]
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "<script" not in html and html.count('title="A=') == sum(
        len(r["token_advantages"]) for est in ("grpo", "mrpo") for r in load_credit(tmp_path / est)
        if r["record_id"] in ("r1", "r2", "r3", "r4"))
    assert "data:image/png;base64," in html and (tmp_path / "rep" / "figures" / "credit_by_position.png").is_file()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "step 2 INVALID mean A -1.558" in md  # K=4, p=1/3: -e^(2/3) * 0.8 = -1.5582 (MRPO)
    assert json.loads((tmp_path / "rep" / "credit_summary.json").read_text())["vmax"] == pytest.approx(summary["vmax"])
    assert main(["analyze", "credit", str(tmp_path / "grpo"), str(tmp_path / "mrpo"), "--out", str(tmp_path / "c")]) == 0
    assert "mrpo: 4 rollouts logged at steps [1, 11]" in capsys.readouterr().out


def test_bad_input_names_file_line_and_field(tmp_path, capsys):
    from medrl.cli import main

    with pytest.raises(FileNotFoundError, match="log_credit_every"):
        load_credit(tmp_path)
    (tmp_path / "credit.jsonl").write_text('{"text": "a", "offsets": [[0, 1]], "token_advantages": [1.0], '
                                           '"steps": [], "advantage": 1.0}\n{"text": 3}\n')
    with pytest.raises(ValueError, match=r"credit.jsonl: line 2: field 'text'"):
        load_credit(tmp_path)
    (tmp_path / "credit.jsonl").write_text('{"text": "a", "offsets": [[0, 1]], "token_advantages": [], '
                                           '"steps": [], "advantage": 1.0}\n')
    with pytest.raises(ValueError, match="line 1: 0 token_advantages for 1 offsets"):
        load_credit(tmp_path)
    assert main(["analyze", "credit", str(tmp_path / "none")]) == 2
    assert "not found" in capsys.readouterr().err


BYTE_TEXT = "<think>Das Herz é vergrößert → 中文 😀.</think><answer>cardiomegaly</answer>"


def _byte_level_row(text: str = BYTE_TEXT, offsets=None) -> dict:
    """A credit row of a byte-level BPE tokenizer (the tiny test models'), offsets as the
    trainer computes them: several tokens cover one character (é, ö, ß, →, 中, 😀)."""
    from medrl.answers.completion import completion_token_offsets
    from medrl.models.tiny import DEFAULT_TEXTS, _train_tokenizer

    if offsets is None:
        tok = _train_tokenizer(list(DEFAULT_TEXTS), 600)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        offsets = completion_token_offsets(tok, text, ids)
    steps = completion_steps(text)
    spans = step_token_spans(text, steps, offsets)
    adv = [-0.5 - 0.01 * i for i in range(len(offsets))]
    return rollout_row(text=text, offsets=offsets, token_advantages=adv, advantage=-0.5, steps=steps,
                       step_token_spans=spans, step_valid=[False] * len(steps), rewards={"mrpo_answer": 0.0},
                       r_ans=0.0, step=1, estimator="mrpo", tau=0.6, rollout=0, group=0, record_id="b1",
                       question="Which finding?", reference="cardiomegaly")


def test_byte_level_tokens_of_one_character_render_as_that_character_once():
    """é, →, 中 and 😀 are several byte-level tokens each: the view shows each character once
    (not once per token, not U+FFFD), shaded with its tokens' mean advantage; an empty piece
    inside the text (prefix decoding gives the rest of a character's bytes no characters) joins
    the character before it instead of showing as [eos]; a completion cut inside a character is
    a labelled [bytes] box."""
    from medrl.eval.credit_report import character_pieces, rollout_text_html

    row = _byte_level_row()
    assert len(row["offsets"]) > len(character_pieces(row))  # some characters are several tokens
    shown = re.sub(r"<[^>]+>", "", rollout_text_html(row, 1.0)).replace("&lt;", "<").replace("&gt;", ">")
    shown = re.sub(r"\d+[\u2713\u2717?]", "", shown)  # the step markers
    assert shown == BYTE_TEXT and "\ufffd" not in shown and "[eos]" not in shown
    pieces = {row["text"][p["start"]:p["end"]]: p["tokens"] for p in character_pieces(row)}
    assert len(pieces["😀"]) == 4 and len(pieces["中"]) == 3  # 4 and 3 UTF-8 bytes
    html = rollout_text_html(row, 1.0)
    assert "mean of 4 tokens" in html
    # prefix-decoding offsets: the first byte's token holds the character, the next one is empty
    text = "é ok"
    decoded = _byte_level_row(text, offsets=[(0, 1), (1, 1), (1, 2), (2, 4), (4, 4)])
    assert [text[p["start"]:p["end"]] for p in character_pieces(decoded)] == ["é", " ", "ok", ""]
    assert rollout_text_html(decoded, 1.0).count("[eos]") == 1  # only the end of the text
    cut = _byte_level_row("ok \ufffd", offsets=[(0, 2), (2, 3), (3, 4)])
    assert "[bytes]" in rollout_text_html(cut, 1.0) and "\ufffd" not in rollout_text_html(cut, 1.0)


def test_a_position_plot_without_data_says_so(tmp_path):
    """Only right answers logged: no step to place, so the plot and the report say "No data"
    rather than showing two empty frames."""
    rows = [_row("mrpo", 1, 0, "r1", "cardiomegaly", 0.8, [True, True], 1.0)]
    (tmp_path / "ok").mkdir()
    write_jsonl(tmp_path / "ok" / "credit.jsonl", rows)
    summary = credit_report([tmp_path / "ok"], tmp_path / "rep")
    assert summary["position_data"] is False
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "*No data: no wrong-answer rollout" in md and "Steps of wrong-answer rollouts with non-zero" not in md
    from test_report import coloured_pixels

    png = (tmp_path / "rep" / "figures" / "credit_by_position.png").read_bytes()
    assert coloured_pixels(png) > 200  # the "no data" words are drawn in the frames


@pytest.mark.screenshot
def test_credit_report_renders_shaded_text_in_chromium(tmp_path):
    """The shaded tokens are visible in headless Chromium: red and blue token backgrounds; the
    rendered report has no raw markup, no U+FFFD (byte-level tokens) and no empty plot, and a
    report without position data says "No data"."""
    import numpy as np
    from PIL import Image
    from test_report import assert_renders_cleanly, need_chromium, screenshot

    need_chromium()
    _runs(tmp_path)
    with open(tmp_path / "mrpo" / "credit.jsonl", "a") as fh:  # a rollout of byte-level tokens
        fh.write(json.dumps(_byte_level_row()) + "\n")
    credit_report([tmp_path / "grpo", tmp_path / "mrpo"], tmp_path / "rep", names=["GRPO", "MRPO"], max_prompts=10)
    text = assert_renders_cleanly(tmp_path / "rep" / "report.html", tmp_path, height=3000)
    assert "vergrößert → 中文 😀" in text
    rows = [_row("mrpo", 1, 0, "r1", "cardiomegaly", 0.8, [True, True], 1.0)]
    (tmp_path / "ok").mkdir()
    write_jsonl(tmp_path / "ok" / "credit.jsonl", rows)
    credit_report([tmp_path / "ok"], tmp_path / "nodata")
    assert "No data: no wrong-answer rollout" in assert_renders_cleanly(tmp_path / "nodata" / "report.html", tmp_path)
    png = tmp_path / "shot.png"
    screenshot(tmp_path / "rep" / "report.html", png, tmp_path, height=1000)
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    r, g, b = img[:, :, 0], img[:, :, 1], img[:, :, 2]
    reddish = (r - b > 60) & (r - g > 60)       # invalid-step shading of MRPO (and GRPO's wrong rows)
    bluish = (b - r > 50) & (b > 150)           # positive advantages
    top = slice(150, 1000)                      # below the title: the legend and the rollouts
    assert reddish[top].sum() > 3000, reddish.sum()
    assert bluish[top].sum() > 3000, bluish.sum()
    # the strong red of MRPO's first invalid step (-e|A_i|, 80% saturation) appears
    strong = (np.abs(r - 223) < 6) & (np.abs(g - 89) < 8) & (np.abs(b - 82) < 8)
    assert strong[top].sum() > 500, strong.sum()
