"""Markdown and self-contained HTML reports (tables, paragraphs, PNG figures).

A :class:`Report` collects blocks in order and writes ``report.md`` (figures linked by relative
path) and ``report.html`` (figures embedded as base64 PNG, inline CSS, no scripts and no
network), so the HTML file alone can be mailed or opened anywhere.

Text is written once, in Markdown's inline syntax (```code```, ``**bold**``, ``*italic*``):
``report.md`` keeps it and ``report.html`` renders it (:func:`inline_html`, after escaping), so
neither shows raw markup. In HTML tables, columns of numbers are right-aligned and columns of
prose left-aligned (:func:`numeric_column`).
"""

from __future__ import annotations

import base64
import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #4C72B0;padding-bottom:.2em}h2{margin-top:1.6em;color:#333}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.92em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}th{background:#eef2f8}
td:first-child,th:first-child,td.text,th.text{text-align:left}caption{caption-side:top;text-align:left;
font-style:italic;padding:.3em 0}figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.9em;color:#555}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;
white-space:pre-wrap}.note{color:#555;font-size:.92em}code{background:#f0f0f0;padding:0 .2em;border-radius:2px}
"""

_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
#: A table cell that is a number: "12", "-0.5", "45.2%", "0.500 [0.400, 0.600]", "1,234", "-", "yes".
_NUMERIC_CELL = re.compile(r"[-+]?(\d[\d,]*(\.\d+)?|\.\d+)(e[-+]?\d+)?\s*%?(\s*\[[^\]]*\])?|[-?]|yes|no|nan|inf",
                           re.IGNORECASE)


def inline_html(text: str) -> str:
    """``text`` escaped for HTML, with Markdown's inline ```code```, ``**bold**`` and
    ``*italic*`` rendered (what ``report.md`` shows as formatting)."""
    out = []
    pos = 0
    for m in _CODE.finditer(text):  # code spans first: nothing inside them is formatting
        out.append(_emphasis(html.escape(text[pos:m.start()])))
        out.append(f"<code>{html.escape(m.group(1))}</code>")
        pos = m.end()
    out.append(_emphasis(html.escape(text[pos:])))
    return "".join(out)


def _emphasis(escaped: str) -> str:
    escaped = _BOLD.sub(r"<strong>\1</strong>", escaped)
    return _ITALIC.sub(r"<em>\1</em>", escaped)


def numeric_column(cells: Sequence[str]) -> bool:
    """Whether every non-empty cell of a column is a number (right-aligned; prose is left-aligned)."""
    filled = [str(c).strip() for c in cells if str(c).strip()]
    return bool(filled) and all(_NUMERIC_CELL.fullmatch(c) for c in filled)


def ci_cell(m: dict | None, pct: bool) -> str:
    """``mean [low, high]`` of a metric summary (``{"mean", "low", "high"}``; percent when ``pct``);
    "-" when there is no mean. A percentage is a proportion: its interval is Wilson's
    (:func:`medrl.eval.stats.honest_interval`), so 0 of 10 reads "0.0 [0.0, 27.8]", never a
    certain "0.0 [0.0, 0.0]"."""
    if not m or m.get("mean") is None:
        return "-"
    if pct:
        from medrl.eval.stats import honest_interval

        m = honest_interval(m)
        return f"{100 * m['mean']:.1f} [{100 * m['low']:.1f}, {100 * m['high']:.1f}]"
    return f"{m['mean']:.3f} [{m['low']:.3f}, {m['high']:.3f}]"


def ci_method(m: dict | None, pct: bool) -> str | None:
    """How the interval :func:`ci_cell` shows for ``m`` was made ("wilson", "bootstrap",
    "stratified bootstrap"; :data:`medrl.eval.stats.METHOD_NAMES`), None when it shows none."""
    if not m or m.get("mean") is None:
        return None
    if pct:
        from medrl.eval.stats import honest_interval

        m = honest_interval(m)
    return m.get("method") or "bootstrap"


def interval_note(columns: Sequence[tuple[str, Sequence[dict | None], bool]]) -> str:
    """One sentence naming the method of every interval in a table: ``columns`` holds (column
    label, the summaries of its cells, pct) - "95% intervals: Wilson score for Accuracy (%);
    percentile bootstrap for ROUGE-1." ("" when no cell shows an interval)."""
    from medrl.eval.stats import METHOD_NAMES

    by_method: dict[str, list[str]] = {}
    for label, cells, pct in columns:
        for method in dict.fromkeys(ci_method(c, pct) for c in cells):
            if method is not None:
                by_method.setdefault(method, []).append(label)
    if not by_method:
        return ""
    return "95% intervals: " + "; ".join(f"{METHOD_NAMES.get(k, k)} for {', '.join(v)}"
                                          for k, v in by_method.items()) + "."


def interval_name(cells: Sequence[dict | None], pct: bool) -> str:
    """The method of ``cells``' intervals for a figure title ("Wilson score", "percentile
    bootstrap", or both joined by "/")."""
    from medrl.eval.stats import METHOD_NAMES

    methods = [m for m in dict.fromkeys(ci_method(c, pct) for c in cells) if m]
    return " / ".join(METHOD_NAMES.get(m, m) for m in methods) or "no"


def fmt(v: Any, pct: bool = False, digits: int = 3) -> str:
    """A table cell: None -> "-", floats rounded (or as percentages)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{100 * v:.1f}" if pct else f"{v:.{digits}f}"
    return str(v)


@dataclass
class Report:
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def heading(self, text: str) -> "Report":
        self.blocks.append(("h2", text))
        return self

    def paragraph(self, text: str, note: bool = False) -> "Report":
        self.blocks.append(("note" if note else "p", text))
        return self

    def code(self, text: str) -> "Report":
        self.blocks.append(("pre", text))
        return self

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> "Report":
        """``rows`` hold already-formatted cells (use :func:`fmt`)."""
        self.blocks.append(("table", (list(header), [[str(c) for c in r] for r in rows], caption)))
        return self

    def figure(self, path: str | Path, caption: str = "") -> "Report":
        self.blocks.append(("figure", (Path(path), caption)))
        return self

    def html(self, fragment: str, markdown: str = "") -> "Report":
        """A ready-made HTML fragment (inline styles only, no scripts; the caller escapes its
        text) and what ``report.md`` shows in its place."""
        self.blocks.append(("html", (fragment, markdown)))
        return self

    # ------------------------------------------------------------------ writers
    def to_markdown(self, base: Path) -> str:
        out = [f"# {self.title}", ""]
        for kind, val in self.blocks:
            if kind == "h2":
                out += [f"## {val}", ""]
            elif kind in ("p", "note"):
                out += [val, ""]
            elif kind == "pre":
                out += ["```", val, "```", ""]
            elif kind == "html":
                out += [val[1], ""] if val[1] else []
            elif kind == "table":
                header, rows, caption = val
                if caption:
                    out += [f"*{caption}*", ""]
                out.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
                out.append("|" + "|".join("---" for _ in header) + "|")
                out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
                out.append("")
            elif kind == "figure":
                path, caption = val
                rel = os.path.relpath(path, base)
                out += [f"![{caption}]({rel})", "", f"*{caption}*" if caption else "", ""]
        return "\n".join(out).rstrip() + "\n"

    def to_html(self) -> str:
        e = html.escape
        md = inline_html
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               f"<title>{e(self.title)}</title><style>{_CSS}</style></head><body>",
               f"<h1>{md(self.title)}</h1>"]
        for kind, val in self.blocks:
            if kind == "h2":
                out.append(f"<h2>{md(val)}</h2>")
            elif kind == "p":
                out.append(f"<p>{md(val)}</p>")
            elif kind == "note":
                out.append(f'<p class="note">{md(val)}</p>')
            elif kind == "pre":
                out.append(f"<pre>{e(val)}</pre>")
            elif kind == "html":
                out.append(val[0])
            elif kind == "table":
                header, rows, caption = val
                text = [not numeric_column([r[j] for r in rows if j < len(r)]) for j in range(len(header))]
                cls = lambda j: ' class="text"' if j < len(text) and text[j] else ""  # noqa: E731
                t = ["<table>"]
                if caption:
                    t.append(f"<caption>{md(caption)}</caption>")
                t.append("<tr>" + "".join(f"<th{cls(j)}>{md(h)}</th>" for j, h in enumerate(header)) + "</tr>")
                t += ["<tr>" + "".join(f"<td{cls(j)}>{md(c)}</td>" for j, c in enumerate(r)) + "</tr>" for r in rows]
                t.append("</table>")
                out.append("".join(t))
            elif kind == "figure":
                path, caption = val
                data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
                out.append(f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
                           f"<figcaption>{md(caption)}</figcaption></figure>")
        out.append("</body></html>")
        return "\n".join(out) + "\n"

    def write(self, out_dir: str | Path, stem: str = "report") -> tuple[Path, Path]:
        """Write ``<stem>.md`` and ``<stem>.html`` into ``out_dir``; returns both paths."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        md = out_dir / f"{stem}.md"
        ht = out_dir / f"{stem}.html"
        md.write_text(self.to_markdown(out_dir), encoding="utf-8")
        ht.write_text(self.to_html(), encoding="utf-8")
        return md, ht


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")
