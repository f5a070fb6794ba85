"""The demo's phantom section: GRPO vs MRPO over seeds where the truth is known.

The demo's VQA-RAD comparison cannot show an effect at CPU scale (one seed, a heuristic judge,
64 test records). This section runs the effects harness (:mod:`medrl.effects`) at a small
budget: a tiny policy warmed up on phantom traces with a stated share of early errors, GRPO and
MRPO from it with the same seed, data order and budget for :data:`DEMO_SEEDS` seeds, scored by
the exact oracle; the report shows the per-seed values, the paired difference with its 95%
interval, and whether it is significant. ``medrl bench effects`` is the full benchmark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medrl.effects.config import PROFILES

#: effects settings of the demo's section: the full profile's task, model, warm-up and RL budget
#: (docs/effects.md), 3 seeds of GRPO vs MRPO and nothing else, so its numbers are the full
#: profile's first three seeds (CPU runs repeat exactly). The stage takes about 5.5 minutes on 2
#: idle cores (the 0.8M model's warm-up 4.4 min, six RL runs with evaluation of about 20 s each,
#: two at a time), which keeps the default demo within 25 minutes.
DEMO_SETTINGS = dict(profile="demo", seeds=3, noise_sweep=(), signatures=(), hacks=(), workers=2)
#: the harness's own ``quick`` profile with two seeds and the GRPO-vs-MRPO comparison only
QUICK_SETTINGS = dict(PROFILES["quick"], profile="demo-quick", seeds=2, noise_sweep=(), signatures=(), hacks=())
DEMO_SEEDS = DEMO_SETTINGS["seeds"]
FOLDER = "phantom"


def phantom_config(quick: bool):
    import dataclasses

    from medrl.effects import make_config

    return dataclasses.replace(make_config("full"), **(QUICK_SETTINGS if quick else DEMO_SETTINGS))


def stage_phantom(out: Path, quick: bool, echo=print) -> dict:
    """Run (or resume) the section's runs in ``out/phantom``; returns the paired numbers."""
    from medrl.effects import run_effects

    config = phantom_config(quick)
    run_effects(config, Path(out) / FOLDER, progress=False, echo=echo)
    return summary(Path(out))


def summary(out: Path) -> dict | None:
    import json

    f = Path(out) / FOLDER / "results.json"
    if not f.is_file():
        return None
    main = json.loads(f.read_text()).get("main", {})
    return {k: {x: v.get(x) for x in ("n", "a_mean", "b_mean", "diff", "ci_low", "ci_high", "t_p", "wilcoxon_p")}
            for k, v in main.items()}


def phantom_section(rep: Any, ctx: Any) -> None:
    """The report section (reads ``<demo>/phantom/results.json``; absent: a note)."""
    import json

    from medrl.effects.stats import claim_sentence

    f = Path(ctx.out) / FOLDER / "results.json"
    rep.heading("Where the truth is known: GRPO vs MRPO on phantoms, over seeds")
    if not f.is_file():
        rep.paragraph("The phantom comparison has not run in this folder.", note=True)
        return
    a = json.loads(f.read_text())
    c, w = a["config"], a.get("warmup") or {}
    ws, we = w.get("warmup") or {}, w.get("eval") or {}
    rep.paragraph(
        f"Synthetic medical VQA (medrl's phantom source: {', '.join(c['question_types'])} questions, "
        f"{c['image_size']} px) whose every answer and reasoning step is checked exactly by the oracle judge. A tiny "
        f"policy (hidden {c['hidden_size']}, {c['num_layers']} layers) is warmed up for {c['sft_steps']} SFT steps on "
        f"traces of which {100 * (ws.get('early_error_share') or 0):.0f}% open with a wrong first step that carries "
        f"into the answer; GRPO and MRPO then train from it for {c['rl_steps']} steps with the same seed, data order "
        f"and budget, for {c['seeds']} seeds, and are scored on {c['n_test']} held-out phantoms. Warm-up model: "
        f"well-formed {_pct((we.get('format') or {}).get('p'))}, accuracy {_pct((we.get('accuracy') or {}).get('p'))}. "
        "`medrl bench effects` runs the full benchmark (docs/effects.md).")
    m = a["main"]
    rows = []
    for s in range(c["seeds"]):
        rows.append([s] + [f"{_pct(m[k]['a_values'][s])} -> {_pct(m[k]['b_values'][s])}"
                           for k in ("early_share", "accuracy")])
    rep.table(["seed", "early-failure share GRPO -> MRPO", "accuracy GRPO -> MRPO"], rows)
    rep.table(["metric", "MRPO - GRPO (mean over seeds)", "95% CI", "paired t p", "Wilcoxon p"],
              [[k, _pp(m[k].get("diff")), (f"[{_pp(m[k].get('ci_low'))}, {_pp(m[k].get('ci_high'))}]"
                                            if m[k].get("ci_low") is not None else "n/a (no spread over seeds)"),
                _p(m[k].get("t_p")), _p(m[k].get("wilcoxon_p"))] for k in ("early_share", "accuracy")])
    rep.paragraph(claim_sentence("Early-failure share", m["early_share"], a="GRPO", b="MRPO", lower_is_better=True))
    rep.paragraph(claim_sentence("Accuracy", m["accuracy"], a="GRPO", b="MRPO"))


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _pp(v) -> str:
    return "n/a" if v is None else f"{100 * v:+.1f} pp"


def _p(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


__all__ = ["DEMO_SETTINGS", "QUICK_SETTINGS", "phantom_config", "phantom_section", "run_stage", "stage_phantom",
           "summary"]


def run_stage(demo: Any, index: int, total: int) -> dict | None:
    """The demo stage: ``demo`` is the running :class:`~medrl.commands.demo_pipeline.pipeline.Demo`."""
    quick = demo.config.mode == "quick"
    c = phantom_config(quick)
    title = (f"Phantoms (known truth): GRPO vs MRPO over {c.seeds} seeds, {c.rl_steps} RL steps each, "
             f"scored by the oracle")
    done = Path(demo.out) / FOLDER / "results.json"
    return demo.runner.run(index, total, "phantom", title, lambda: stage_phantom(demo.out, quick, demo.echo),
                           is_done=done.is_file, load=lambda: summary(Path(demo.out)))
