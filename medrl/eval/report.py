"""Markdown and self-contained HTML reports (tables, paragraphs, PNG figures).

A :class:`Report` collects blocks in order and writes ``report.md`` (figures linked by relative
path) and ``report.html`` (figures embedded as base64 PNG, inline CSS, no scripts and no
network), so the HTML file alone can be mailed or opened anywhere.
"""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #4C72B0;padding-bottom:.2em}h2{margin-top:1.6em;color:#333}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.92em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}th{background:#eef2f8}
td:first-child,th:first-child{text-align:left}caption{caption-side:top;text-align:left;
font-style:italic;padding:.3em 0}figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.9em;color:#555}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;
white-space:pre-wrap}.note{color:#555;font-size:.92em}
"""


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
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               f"<title>{e(self.title)}</title><style>{_CSS}</style></head><body>",
               f"<h1>{e(self.title)}</h1>"]
        for kind, val in self.blocks:
            if kind == "h2":
                out.append(f"<h2>{e(val)}</h2>")
            elif kind == "p":
                out.append(f"<p>{e(val)}</p>")
            elif kind == "note":
                out.append(f'<p class="note">{e(val)}</p>')
            elif kind == "pre":
                out.append(f"<pre>{e(val)}</pre>")
            elif kind == "html":
                out.append(val[0])
            elif kind == "table":
                header, rows, caption = val
                t = ["<table>"]
                if caption:
                    t.append(f"<caption>{e(caption)}</caption>")
                t.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
                t += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
                t.append("</table>")
                out.append("".join(t))
            elif kind == "figure":
                path, caption = val
                data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
                out.append(f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
                           f"<figcaption>{e(caption)}</figcaption></figure>")
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
