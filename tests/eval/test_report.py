"""The HTML report renders in headless Chromium with its figures visible (screenshot check),
without raw markup (literal ``**``, backticks, Markdown links or headings in the rendered text)
and without empty plots (a figure with no coloured mark must say "No data" in its caption):
:func:`assert_renders_cleanly`, used by the eval, credit and FFP report checks.

Skipped when no Chromium is installed (Debian: ``apt-get install chromium``), except under CI
(``CI=true``, set by ``.ci/run``, which installs it), where a missing browser fails. The same
check by hand is described in docs/evaluation.md.
"""

import base64
import io
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from medrl.eval import plots
from medrl.eval.report import Report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "chrome")
                 if shutil.which(n)), None)


def need_chromium() -> None:
    """Skip without Chromium; under CI (``CI`` set to true/1/yes) fail instead: CI installs it."""
    if CHROMIUM is None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail("Chromium not found but CI is set: .ci/run installs Debian's chromium "
                        "(apt-get install chromium); the screenshot checks must not be skipped in CI")
        pytest.skip("Chromium not installed (Debian: apt-get install chromium)")


def screenshot(html_path, png_path, tmp_path, width=1200, height=1600):
    """Headless Chromium screenshot of a local HTML file (no network, throwaway profile)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png_path}",
           f"--window-size={width},{height}", f"file://{html_path}"]
    subprocess.run(cmd, check=True, timeout=90, capture_output=True)


def rendered_dom(html_path, tmp_path) -> str:
    """The page's DOM after Chromium rendered it (``--dump-dom``)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", f"file://{html_path}"]
    return subprocess.run(cmd, check=True, timeout=90, capture_output=True, text=True).stdout


class _Text(HTMLParser):
    """Visible text outside <pre> (model outputs are shown as they are), and the figures."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.figures, self._skip, self._fig = [], [], 0, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("pre", "style", "script", "title"):
            self._skip += 1
        elif tag == "figure":
            self._fig = {"src": None, "caption": ""}
        elif tag == "img" and self._fig is not None:
            self._fig["src"] = a.get("src")

    def handle_endtag(self, tag):
        if tag in ("pre", "style", "script", "title"):
            self._skip -= 1
        elif tag == "figure" and self._fig is not None:
            self.figures.append(self._fig)
            self._fig = None

    def handle_data(self, data):
        if self._fig is not None:
            self._fig["caption"] += data
        if not self._skip:
            self.text.append(data)


RAW_MARKUP = [(re.compile(r"\*\*\S"), "literal **"), (re.compile(r"`"), "a backtick"),
              (re.compile(r"\]\("), "a Markdown link"), (re.compile(r"(^|\n)\s*#{1,6} "), "a Markdown heading"),
              (re.compile(r"&(lt|gt|amp|quot|#x27);"), "double-escaped HTML"), (re.compile(r"\ufffd"), "U+FFFD")]


def raw_markup(text: str) -> list[str]:
    """What in rendered ``text`` is markup that did not render."""
    return [f"{what}: ...{text[max(0, m.start() - 40):m.end() + 40]!r}..." for rx, what in RAW_MARKUP
            for m in [rx.search(text)] if m]


def coloured_pixels(png_bytes: bytes) -> int:
    """Pixels with a colour (not white, grey or black): marks of data, not frames or text."""
    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png_bytes)).convert("RGB")).astype(int)
    return int(((img.max(axis=2) - img.min(axis=2)) > 60).sum())


def empty_figures(figures: list[dict]) -> list[str]:
    """Captions of figures that show no data mark and do not say "No data"."""
    out = []
    for f in figures:
        data = base64.b64decode(f["src"].split(",", 1)[1]) if f["src"] and "," in f["src"] else b""
        if not f["caption"].strip().lower().startswith("no data") and coloured_pixels(data) < 200:
            out.append(f["caption"][:80])
    return out


def assert_renders_cleanly(html_path, tmp_path, *, height=1600) -> str:
    """Render ``html_path`` in Chromium: a screenshot with content, no raw markup in the rendered
    text, no empty plot. Returns the rendered text."""
    import numpy as np
    from PIL import Image

    png = tmp_path / f"shot_{html_path.stem}.png"
    screenshot(html_path, png, tmp_path, height=height)
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    assert (img.sum(axis=2) < 700).sum() > 5000  # something rendered
    parser = _Text()
    parser.feed(rendered_dom(html_path, tmp_path))
    text = "".join(parser.text)
    assert raw_markup(text) == []
    assert parser.figures and empty_figures(parser.figures) == []
    return text


def test_the_checks_catch_raw_markup_and_empty_plots(tmp_path):
    """The checks themselves: literal ** and backticks are caught, a figure with only axes is
    empty unless its caption says No data (no browser needed)."""
    assert raw_markup("a **bold** word") and raw_markup("run `medrl`") and not raw_markup("2 * 3 * 4, a*b")
    fig = plots._plt().figure(figsize=(2, 2))
    fig.add_subplot(1, 1, 1)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    src = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    assert empty_figures([{"src": src, "caption": "Accuracy per dataset"}]) == ["Accuracy per dataset"]
    assert empty_figures([{"src": src, "caption": "No data: nothing logged"}]) == []


def _report(tmp_path):
    fig = plots.stage_shares_bars({"GRPO": {"early": 0.212, "mid": 0.351, "late": 0.436},
                                   "MRPO": {"early": 0.13, "mid": 0.399, "late": 0.47}},
                                  tmp_path / "figures" / "stages.png")
    rep = Report("Screenshot check")
    rep.paragraph("A short paragraph above the figure.")
    rep.figure(fig, "FFP stage shares")
    return rep.write(tmp_path)


def test_html_is_self_contained(tmp_path):
    md, html = _report(tmp_path)
    text = html.read_text()
    assert "data:image/png;base64," in text and "<script" not in text and "http" not in text.split("<body>")[1]
    assert "![FFP stage shares](figures/stages.png)" in md.read_text()


@pytest.mark.screenshot
def test_html_report_renders_with_figure(tmp_path):
    import numpy as np
    from PIL import Image

    need_chromium()
    _, html = _report(tmp_path)
    # Move the HTML away from its PNGs: the figure must still show (embedded, not linked).
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "report.html").write_text(html.read_text())
    shutil.rmtree(tmp_path / "figures")
    png = tmp_path / "shot.png"
    screenshot(alone / "report.html", png, tmp_path)
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    assert img.shape[:2] == (1600, 1200)
    colored = (np.abs(img[:, :, 0] - img[:, :, 2]) > 60)  # bar colours (blue/orange), not grey text
    # The bar chart sits below the title; its coloured bars cover many pixels.
    assert colored[150:900].sum() > 5000, colored.sum()
    non_white = (img.sum(axis=2) < 700)
    assert non_white.sum() > 20000


def _eval_folder(tmp_path):
    """An eval report from real scoring (reference judge, standard protocol) of 12 outputs, with
    a ROUGE-1 that is 0 on every output (a continuous score, not a proportion)."""
    from medrl.data import VQARecord
    from medrl.eval.scoring import base_row, score_rows, summarize_scores
    from medrl.eval.workflows import eval_report
    from medrl.judges.reference import ReferenceJudge

    rows = []
    for i in range(12):
        closed = i % 3 == 0
        rec = VQARecord(id=f"r{i}", images=[], question=f"Is there a finding {i}?" if closed else "Which organ?",
                        answer="yes" if closed else "liver", answer_type="CLOSED" if closed else "OPEN",
                        open_ended=not closed, modality="CT")
        said = ("yes" if i % 2 else "no") if closed else ("liver" if i % 4 else "spleen")
        rows.append(base_row(rec, "toy:test", "in", f"<think>The scan is a CT. The organ is visible.</think>"
                                                     f"<answer>{said}</answer>"))
    scored = score_rows(rows, ReferenceJudge(use_embeddings=False), protocols=["standard"], text_metrics=False)
    for r in scored:
        r["scores"]["rouge1"] = 0.0
    metrics = summarize_scores(scored, n_boot=200, protocols=["standard"])
    metrics["config"] = {"model": "toy", "judge": {"spec": "reference"}, "rubrics": ["binary"],
                         "generation": {"max_new_tokens": 64}}
    return eval_report(tmp_path / "ev", scored, metrics)


def test_eval_report_labels_each_interval_by_its_method(tmp_path):
    md, html = _eval_folder(tmp_path)
    text = md.read_text()
    assert "bootstrap CI" not in text and "per dataset with 95% Wilson score confidence intervals" in text
    assert "Wilson score for Judged accuracy (%)" in text and "percentile bootstrap for ROUGE-1" in text
    assert "0.000 [0.000, 0.000]" in text and "0.324" not in text  # ROUGE-1 is 0 everywhere: no proportion CI
    assert "stratified percentile bootstrap" in text  # the macro averages


@pytest.mark.screenshot
def test_eval_report_renders_without_raw_markup_or_empty_plots_in_chromium(tmp_path):
    need_chromium()
    md, html = _eval_folder(tmp_path)
    text = assert_renders_cleanly(html, tmp_path, height=2400)
    assert "Protocol standard:" in text  # `standard` rendered as code, not shown with backticks
    assert "95% Wilson score confidence intervals" in text and "bootstrap CI" not in text
    assert "<code>standard</code>" in html.read_text()


def test_prose_columns_are_left_aligned_and_numbers_right_aligned():
    """The FFP report's "Correctness" column holds sentences: left-aligned (class "text"), while
    columns of numbers and intervals stay right-aligned."""
    rep = Report("t")
    rep.table(["Run", "Correctness", "Outputs", "Accuracy (%)"],
              [["mrpo", "MRPO App. H.1's O/X answer check, judged by `openai:gpt-5-mini`", 12, "45.0 [30.1, 60.2]"],
               ["grpo", "the default verdict", 1234, "-"]])
    html = rep.to_html()
    assert '<th class="text">Correctness</th>' in html and "<td class=\"text\">MRPO App. H.1&#x27;s" in html
    assert "<td>12</td>" in html and "<td>45.0 [30.1, 60.2]</td>" in html and "<code>openai:gpt-5-mini</code>" in html
    assert "td.text" in html  # the rule that left-aligns them
