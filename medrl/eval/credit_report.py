"""``medrl analyze credit RUN [RUN ...]``: where the learning signal lands, token by token.

Reads the ``credit.jsonl`` a training run writes (:mod:`medrl.train.credit`: a few rollouts every
``algorithm.log_credit_every`` steps with the token advantages the loss used) and writes a
report (Markdown + self-contained HTML + PNG):

- **Shaded rollouts.** Each rollout's text with every token's background coloured by its
  advantage on one diverging scale shared by all runs (red = pushed down, blue = pushed up,
  white = 0); reasoning steps underlined and numbered with the judge's verdict (green tick =
  valid, red cross = invalid); the answer, the reference, R_ans and A_i beside the text. When
  several runs logged the same prompt (GRPO and MRPO from the same seed and data order do),
  their rollouts of that prompt at the same step stand side by side.
- **Advantage by relative step position.** For wrong-answer rollouts (R_ans <= tau), the
  mean token advantage of step k at p_k = (k-1)/(K-1) (MRPO Eq. 7,
  App. D.2). Divided by |A_i| the invalid steps of an MRPO run with exponential shaping lie on
  -e^(1-p) (drawn for reference); GRPO's lie on A_i/|A_i| = -1 (every token gets A_i).

:func:`add_credit_section` adds the same blocks to any :class:`medrl.eval.report.Report` (the
demo's "What MRPO changed" section uses it).
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Mapping, Sequence

from medrl.eval.report import Report, fmt

CREDIT_FILE = "credit.jsonl"  # same name as medrl.train.credit.CREDIT_FILE (eval does not import train)
BIN_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
_REQUIRED = {"text": str, "offsets": list, "token_advantages": list, "steps": list}
_NEG, _POS = (215, 48, 39), (33, 102, 172)  # red (advantage < 0), blue (> 0)


# --------------------------------------------------------------------------------------------
# Reading


def credit_path(run: str | Path) -> Path:
    """``RUN/credit.jsonl`` (or RUN itself when it is a file)."""
    p = Path(run)
    return p if p.is_file() else p / CREDIT_FILE


def load_credit(run: str | Path) -> list[dict]:
    """The rows of a run's ``credit.jsonl``, checked; errors name the file, line and field."""
    from medrl.common.jsonl import iter_jsonl

    path = credit_path(run)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: train with algorithm.log_credit_every > 0 "
                                "(default 10) to log credit evidence")
    rows = []
    for line, row in iter_jsonl(path, objects_only=True):
        for field, typ in _REQUIRED.items():
            if not isinstance(row.get(field), typ):
                raise ValueError(f"{path}: line {line}: field {field!r} must be a {typ.__name__}, "
                                 f"got {type(row.get(field)).__name__}")
        if len(row["offsets"]) != len(row["token_advantages"]):
            raise ValueError(f"{path}: line {line}: {len(row['token_advantages'])} token_advantages for "
                             f"{len(row['offsets'])} offsets")
        if not isinstance(row.get("advantage"), (int, float)):
            raise ValueError(f"{path}: line {line}: field 'advantage' must be a number")
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no credit rows")
    return rows


def is_wrong(row: dict) -> bool | None:
    """R_ans <= tau (MRPO Sec. 4.2, tau from the row, default 0.6); None when R_ans is unknown."""
    r = row.get("r_ans")
    if r is None:
        return None
    return float(r) <= float(row.get("tau", 0.6) if row.get("tau") is not None else 0.6)


# --------------------------------------------------------------------------------------------
# Advantage by relative step position


def step_points(row: dict) -> list[dict]:
    """Per reasoning step with tokens: ``p`` = (k-1)/(K-1) (0 when K = 1), ``mean`` token
    advantage over the step's tokens, ``scaled`` = mean / |A_i| (None when A_i = 0), ``valid``."""
    steps = row.get("steps") or []
    K = len(steps)
    adv = row["token_advantages"]
    a = abs(float(row["advantage"]))
    out = []
    for k, s in enumerate(steps):
        ts, te = s.get("token_start"), s.get("token_end")
        if ts is None or te is None or te <= ts:
            continue
        vals = adv[ts:te]
        mean = sum(vals) / len(vals)
        out.append({"p": k / (K - 1) if K > 1 else 0.0, "mean": mean, "scaled": mean / a if a > 0 else None,
                    "valid": s.get("valid")})
    return out


def position_profile(rows: Sequence[dict]) -> dict:
    """Steps of wrong-answer rollouts (in the loss, A_i != 0) by relative position p_k.

    Returns ``{"points": [...step_points...], "bins": [{"bin", "p_mean", "n", "mean", "n_invalid",
    "invalid_scaled", "n_valid", "valid_scaled"}]}``: per bin of width 0.2 (the last one closed),
    the mean token advantage of all its steps, and the mean of ``scaled`` over its invalid and
    its valid steps.
    """
    points = []
    for r in rows:
        if is_wrong(r) and r.get("in_loss", True) and float(r["advantage"]) != 0.0:
            points += step_points(r)
    bins = []
    for j in range(len(BIN_EDGES) - 1):
        lo, hi = BIN_EDGES[j], BIN_EDGES[j + 1]
        inside = [q for q in points if lo <= q["p"] < hi or (j == len(BIN_EDGES) - 2 and q["p"] == hi)]
        inv = [q["scaled"] for q in inside if q["valid"] is False and q["scaled"] is not None]
        val = [q["scaled"] for q in inside if q["valid"] is True and q["scaled"] is not None]
        bins.append({
            "bin": f"[{lo:.1f}, {hi:.1f}{']' if j == len(BIN_EDGES) - 2 else ')'}",
            "p_mean": _mean([q["p"] for q in inside]), "n": len(inside),
            "mean": _mean([q["mean"] for q in inside]),
            "n_invalid": len(inv), "invalid_scaled": _mean(inv),
            "n_valid": len(val), "valid_scaled": _mean(val),
        })
    return {"points": points, "bins": bins}


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


#: What the position plot says when no run logged a step it can place.
NO_POSITION_DATA = ("No data: no wrong-answer rollout (R_ans <= tau) with a non-zero A_i and reasoning steps "
                    "was logged, so no step can be placed")


def has_position_data(profiles: Mapping[str, dict]) -> bool:
    """Whether any run has a step to draw in :func:`plot_position_profile`."""
    return any(prof["points"] for prof in profiles.values())


def plot_position_profile(profiles: Mapping[str, dict], path: str | Path) -> Path:
    """Two panels per run: mean token advantage per p_k bin (all steps of wrong-answer rollouts),
    and invalid/valid steps' advantage / |A_i| by p_k with the -e^(1-p) reference. With no step
    to draw, both panels say so (:data:`NO_POSITION_DATA`) instead of showing empty frames."""
    from medrl.eval.plots import _plt, _save

    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    if not has_position_data(profiles):
        for ax in (ax1, ax2):
            ax.text(0.5, 0.5, "no data:\nno wrong-answer rollout with steps\nand a non-zero advantage was logged",
                    ha="center", va="center", fontsize=11, color="#a33", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        ax1.set_title("Mean token advantage per step (wrong-answer rollouts)", fontsize=9)
        ax2.set_title("Step token advantage / |A_i| by p_k (wrong-answer rollouts)", fontsize=9)
        return _save(fig, path)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, (name, prof) in zip(colors * 4, profiles.items()):
        xs = [b["p_mean"] for b in prof["bins"] if b["mean"] is not None]
        ys = [b["mean"] for b in prof["bins"] if b["mean"] is not None]
        ax1.plot(xs, ys, "o-", color=c, label=name)
        inv = [q for q in prof["points"] if q["valid"] is False and q["scaled"] is not None]
        val = [q for q in prof["points"] if q["valid"] is True and q["scaled"] is not None]
        ax2.scatter([q["p"] for q in inv], [q["scaled"] for q in inv], color=c, marker="x", s=28,
                    label=f"{name}: invalid steps")
        ax2.scatter([q["p"] for q in val], [q["scaled"] for q in val], color=c, marker="o", s=18,
                    facecolors="none", label=f"{name}: valid steps")
    grid = [i / 50 for i in range(51)]
    ax2.plot(grid, [-math.exp(1 - p) for p in grid], "k--", lw=1, label="-e^(1-p) (MRPO Eq. 7)")
    ax2.axhline(-1, color="grey", lw=0.6, ls=":")
    ax1.axhline(0, color="grey", lw=0.6)
    ax1.set_title("Mean token advantage per step (wrong-answer rollouts)", fontsize=9)
    ax1.set_xlabel("relative step position p_k = (k-1)/(K-1), bins of 0.2")
    ax1.set_ylabel("mean token advantage")
    ax2.set_title("Step token advantage / |A_i| by p_k (wrong-answer rollouts)", fontsize=9)
    ax2.set_xlabel("relative step position p_k")
    ax2.set_ylabel("advantage / |A_i|")
    for ax in (ax1, ax2):
        ax.set_xlim(-0.05, 1.05)
        ax.legend(fontsize=7)
    return _save(fig, path)


# --------------------------------------------------------------------------------------------
# Shaded text


def color_scale(rows_by_run: Mapping[str, Sequence[dict]]) -> float:
    """The largest |token advantage| over every run's rows (1.0 when all are 0): one scale."""
    m = max((abs(v) for rows in rows_by_run.values() for r in rows for v in r["token_advantages"]), default=0.0)
    return m if m > 0 else 1.0


def token_color(v: float, vmax: float) -> str:
    """Diverging colour: white at 0, towards red for negative and blue for positive values
    (at most 80% saturated so black text stays readable)."""
    s = max(-1.0, min(1.0, v / vmax)) * 0.8
    base = _NEG if s < 0 else _POS
    rgb = [round(255 + (b - 255) * abs(s)) for b in base]
    return f"rgb({rgb[0]},{rgb[1]},{rgb[2]})"


def legend_html(vmax: float) -> str:
    cells = []
    for j in range(11):
        v = -vmax + 2 * vmax * j / 10
        cells.append(f'<span style="display:inline-block;width:3.2em;text-align:center;font-size:.75em;'
                     f'background:{token_color(v, vmax)}">{v:+.2f}</span>')
    return ('<p style="margin:.4em 0">Token advantage (shared scale): ' + "".join(cells)
            + ' &nbsp; <span style="border-bottom:3px solid #2ca02c">valid step</span> '
              '<span style="border-bottom:3px solid #d62728">invalid step</span> '
              '<span style="border-bottom:3px solid #999">not judged</span></p>')


def _step_color(valid) -> str:
    return "#999" if valid is None else ("#2ca02c" if valid else "#d62728")


def character_pieces(row: dict) -> list[dict]:
    """The rollout's tokens grouped into pieces of whole characters, in order: ``{"start",
    "end", "tokens": [indices]}``.

    Byte-level tokenizers split one character (an accent, an arrow, a CJK character, an emoji)
    over several tokens: their offsets all cover that character (the fast tokenizer's mapping),
    or the first covers it and the others are empty (decoding prefixes). Shown token by token,
    the character would appear once per token, or its bytes as U+FFFD; grouped, it appears once
    with its tokens' mean advantage. An empty piece at the end of the text (EOS) stays a token
    of its own."""
    text_len = len(row["text"])
    pieces: list[dict] = []
    for t, (a, b) in enumerate(row["offsets"]):
        a, b = int(a), int(b)
        last = pieces[-1] if pieces else None
        if last is not None and ((a < last["end"] and b > a) or (b <= a and a < text_len)):
            last["tokens"].append(t)  # the same character again, or the rest of its bytes
            last["end"] = max(last["end"], b)
            continue
        pieces.append({"start": a, "end": max(a, b), "tokens": [t]})
    return pieces


def _piece_html(piece: str) -> str:
    """A piece of text for the shaded view: escaped; bytes that are no character (U+FFFD, a
    completion cut inside a character) shown as a labelled box, not as the replacement sign."""
    if not piece:
        return '<span style="font-size:.7em;color:#555">[eos]</span>'
    parts = piece.split("\ufffd")
    box = ('<span style="font-size:.7em;color:#555;border:1px dotted #999" title="bytes that are no whole '
           'character (a character cut by the generation limit, or invalid UTF-8)">[bytes]</span>')
    return box.join(html.escape(p) for p in parts)


def rollout_text_html(row: dict, vmax: float) -> str:
    """The completion with every character piece (:func:`character_pieces`) shaded by its
    tokens' advantage and steps marked."""
    starts = {}
    for k, s in enumerate(row.get("steps") or []):
        if s.get("token_start") is not None and s.get("token_end", 0) > s["token_start"]:
            starts[s["token_start"]] = (k, s)
    step_of = {t: s for _, s in starts.values() for t in range(s["token_start"], s["token_end"])}
    out = []
    text = row["text"]
    adv = row["token_advantages"]
    for piece in character_pieces(row):
        toks = piece["tokens"]
        for t in toks:
            if t in starts:
                k, s = starts[t]
                mark = "?" if s.get("valid") is None else ("\u2713" if s["valid"] else "\u2717")
                out.append(f'<span style="font-size:.7em;font-weight:bold;color:#fff;background:{_step_color(s.get("valid"))};'
                           f'border-radius:3px;padding:0 .25em;margin:0 .15em">{k + 1}{mark}</span>')
        v = sum(adv[t] for t in toks) / len(toks)
        shown = _piece_html(text[piece["start"]:piece["end"]])
        s = next((step_of[t] for t in toks if t in step_of), None)
        under = f";border-bottom:3px solid {_step_color(s.get('valid'))}" if s is not None else ""
        title = f"A={v:+.4f}" if len(toks) == 1 else \
            f"A={v:+.4f} (mean of {len(toks)} tokens: " + ", ".join(f"{adv[t]:+.4f}" for t in toks) + ")"
        out.append(f'<span style="background:{token_color(v, vmax)}{under}" title="{title}">{shown}</span>')
    return ('<div style="flex:3;min-width:0;font-family:Menlo,Consolas,monospace;font-size:.82em;'
            'white-space:pre-wrap;line-height:1.9">' + "".join(out) + "</div>")


def rollout_html(row: dict, vmax: float) -> str:
    """One rollout: the shaded text and, beside it, answer, reference and the numbers."""
    e = html.escape
    wrong = is_wrong(row)
    verdict = "unscored" if wrong is None else ("wrong" if wrong else "right")
    adv = row["token_advantages"]
    info = [
        f"<b>rollout {row.get('rollout', '-')}</b> (step {row.get('step', '-')})",
        f"answer: <b>{e(str(row.get('answer')))}</b> ({verdict})",
        f"reference: {e(str(row.get('reference')))}",
        f"R_ans {fmt(row.get('r_ans'), digits=2)} (tau {fmt(row.get('tau'), digits=2)})",
        f"A_i {row['advantage']:+.3f}",
        f"token A: {min(adv):+.3f} .. {max(adv):+.3f}" if adv else "no tokens",
    ]
    if not row.get("in_loss", True):
        info.append("<i>excluded from the loss</i>")
    return ('<div style="display:flex;gap:.6em;border-top:1px solid #e5e5e5;padding:.4em 0">'
            + rollout_text_html(row, vmax)
            + '<div style="flex:1;min-width:8em;font-size:.78em;line-height:1.35">' + "<br>".join(info)
            + "</div></div>")


def rollout_markdown(row: dict) -> str:
    wrong = is_wrong(row)
    lines = [f"rollout {row.get('rollout', '-')} (step {row.get('step', '-')}): answer {row.get('answer')!r} "
             f"({'unscored' if wrong is None else 'wrong' if wrong else 'right'}), A_i {row['advantage']:+.3f}"]
    pts = {round(q["p"], 6): q for q in step_points(row)}
    steps = row.get("steps") or []
    for k, s in enumerate(steps):
        p = k / (len(steps) - 1) if len(steps) > 1 else 0.0
        q = pts.get(round(p, 6))
        mark = "?" if s.get("valid") is None else ("VALID" if s["valid"] else "INVALID")
        mean = "-" if q is None else f"{q['mean']:+.3f}"
        lines.append(f"  step {k + 1} {mark:7s} mean A {mean}: {row['text'][s['start']:s['end']][:140]}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Choosing what to show


def _key(row: dict) -> str:
    return str(row.get("record_id") or row.get("question") or row.get("text"))


def _interesting(row: dict) -> bool:
    """A wrong answer with a non-zero advantage: where step-aware shaping can act."""
    return bool(is_wrong(row)) and float(row["advantage"]) != 0.0


def select_prompts(rows_by_run: Mapping[str, Sequence[dict]], max_prompts: int = 6,
                   max_rollouts: int | None = None) -> list[dict]:
    """Up to ``max_prompts`` prompts to show: ``{"key", "step", "question", "reference",
    "runs": {name: [rows]}}``. Prompts that every run logged at a common step come first (shown
    side by side at the earliest such step), then prompts with a wrong-answer rollout of
    non-zero advantage, then by step. With ``max_rollouts``, each run shows at most that many
    rollouts of the prompt, wrong-answer ones with non-zero advantage first."""
    index: dict[str, dict[str, dict[int, list[dict]]]] = {}
    for name, rows in rows_by_run.items():
        for r in rows:
            index.setdefault(_key(r), {}).setdefault(name, {}).setdefault(int(r.get("step") or 0), []).append(r)
    n_runs = len(rows_by_run)
    chosen = []
    for key, per_run in index.items():
        common = set.intersection(*(set(s) for s in per_run.values()))
        paired = len(per_run) == n_runs and n_runs > 1 and bool(common)
        step = min(common) if common else min(min(s) for s in per_run.values())
        shown = {name: per_run[name].get(step, []) for name in rows_by_run if name in per_run}
        shown = {n: rs for n, rs in shown.items() if rs}
        if max_rollouts:
            shown = {n: sorted(sorted(rs, key=lambda r: (not _interesting(r), r.get("rollout", 0)))[:max_rollouts],
                               key=lambda r: r.get("rollout", 0)) for n, rs in shown.items()}
        first = next(iter(shown.values()))[0]
        chosen.append({
            "key": key, "step": step, "paired": paired, "question": first.get("question"),
            "reference": first.get("reference"), "runs": shown,
            "_rank": (not paired, not any(_interesting(r) for rs in shown.values() for r in rs), step),
        })
    chosen.sort(key=lambda c: c["_rank"])
    for c in chosen:
        c.pop("_rank")
    return chosen[:max_prompts]


def prompt_html(item: dict, vmax: float) -> str:
    e = html.escape
    cols = []
    for name, rows in item["runs"].items():
        cols.append('<div style="flex:1;min-width:0"><div style="font-weight:bold;color:#4C72B0">' + e(name)
                    + "</div>" + "".join(rollout_html(r, vmax) for r in rows) + "</div>")
    head = (f"<div><b>Q:</b> {e(str(item['question']))} &nbsp; <b>Reference:</b> {e(str(item['reference']))}"
            f' <span style="color:#777;font-size:.85em">({e(item["key"])}, step {item["step"]})</span></div>')
    return ('<div style="border:1px solid #ccc;border-radius:4px;padding:.5em;margin:.8em 0">' + head
            + '<div style="display:flex;gap:1em;align-items:flex-start">' + "".join(cols) + "</div></div>")


def prompt_markdown(item: dict) -> str:
    parts = [f"**Q:** {item['question']} - **Reference:** {item['reference']} ({item['key']}, step {item['step']})", ""]
    for name, rows in item["runs"].items():
        parts += [f"*{name}*", "", "```"] + [rollout_markdown(r) for r in rows] + ["```", ""]
    return "\n".join(parts).rstrip()


# --------------------------------------------------------------------------------------------
# Report


def add_credit_section(rep: Report, rows_by_run: Mapping[str, Sequence[dict]], fig_dir: str | Path, *,
                       max_prompts: int = 6, max_rollouts: int | None = None) -> dict:
    """Add the legend, the shaded rollouts and the position plot to ``rep``; returns the
    summary (``vmax``, per-run ``rows``/``wrong_rows``/``profile`` bins, ``prompts`` shown,
    ``position_data``: whether the plot has a step to show - else it and the report say "no data")."""
    vmax = color_scale(rows_by_run)
    items = select_prompts(rows_by_run, max_prompts, max_rollouts)
    rep.html(legend_html(vmax), f"Token advantages share one colour scale, |A| <= {vmax:.3f} "
                                "(red < 0 < blue; report.html shows the shaded text).")
    for item in items:
        rep.html(prompt_html(item, vmax), prompt_markdown(item))
    profiles = {name: position_profile(rows) for name, rows in rows_by_run.items()}
    fig = plot_position_profile(profiles, Path(fig_dir) / "credit_by_position.png")
    data = has_position_data(profiles)
    if not data:  # a frame without points would look like a failed plot: say why it is empty
        rep.paragraph(NO_POSITION_DATA + " (the rollouts above were all right, unscored, had A_i = 0 or no steps); "
                      "log more rollouts (`algorithm.log_credit_every`) or train longer.", note=True)
        rep.figure(fig, NO_POSITION_DATA + ".")
    else:
        rep.figure(fig, "Wrong-answer rollouts (R_ans <= tau): left, mean token advantage of a step by its relative "
                        "position p_k; right, each step's advantage / |A_i|, with MRPO's -e^(1-p) for invalid steps "
                        "(GRPO gives every token A_i, so its steps lie at A_i / |A_i|: +1 or -1 by the sign of "
                        "A_i; the dotted line marks -1).")
        rep.table(["Run", "p_k bin", "Steps", "Mean token advantage", "Invalid steps", "Invalid: A / |A_i|",
                   "Valid steps", "Valid: A / |A_i|"],
                  [[name, b["bin"], b["n"], fmt(b["mean"]), b["n_invalid"], fmt(b["invalid_scaled"]),
                    b["n_valid"], fmt(b["valid_scaled"])] for name, p in profiles.items() for b in p["bins"]],
                  "Steps of wrong-answer rollouts with non-zero A_i, by relative position p_k = (k-1)/(K-1).")
    return {
        "vmax": vmax,
        "runs": {name: {"rows": len(rows), "wrong_rows": sum(1 for r in rows if is_wrong(r)),
                        "steps_logged": sorted({int(r.get("step") or 0) for r in rows}),
                        "profile": profiles[name]["bins"]} for name, rows in rows_by_run.items()},
        "prompts": [{"key": i["key"], "step": i["step"], "paired": i["paired"]} for i in items],
        "position_data": data,
    }


def credit_report(runs: Sequence[str | Path], out: str | Path, names: Sequence[str] | None = None,
                  max_prompts: int = 6) -> dict:
    """``out/report.md``, ``out/report.html``, ``out/figures/credit_by_position.png`` and
    ``out/credit_summary.json`` for one or more runs' ``credit.jsonl``."""
    import json

    out = Path(out)
    if names and len(names) != len(runs):
        raise ValueError(f"--names gives {len(names)} names for {len(runs)} runs")
    labels = list(names) if names else [_run_name(r) for r in runs]
    if len(set(labels)) != len(labels):
        labels = [f"{lab} ({i + 1})" for i, lab in enumerate(labels)]
    rows_by_run = {lab: load_credit(r) for lab, r in zip(labels, runs)}
    rep = Report("Token-level credit: where the advantage lands")
    rep.paragraph(
        "Rollouts logged during training (credit.jsonl) with the advantage each token received in the loss. "
        "Red tokens were pushed down, blue pushed up; numbered boxes start the reasoning steps with the judge's "
        "verdict. GRPO gives every token of a rollout its sequence advantage A_i; MRPO (Eq. 7) reshapes the "
        "step tokens of wrong-answer rollouts: -e^(1-p_k)|A_i| on invalid steps, +|A_i| on valid ones. "
        "Runs: " + ", ".join(f"{lab} ({credit_path(r)})" for lab, r in zip(labels, runs)) + ".")
    summary = add_credit_section(rep, rows_by_run, out / "figures", max_prompts=max_prompts)
    rep.write(out)
    (out / "credit_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _run_name(run: str | Path) -> str:
    p = Path(run)
    return (p.parent if p.is_file() else p).resolve().name or str(p)


__all__ = [
    "add_credit_section", "character_pieces", "color_scale", "credit_report", "load_credit", "plot_position_profile",
    "position_profile", "select_prompts", "step_points", "token_color",
]
