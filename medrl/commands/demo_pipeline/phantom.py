"""The demo's phantom section: RL learning where the truth is known, warm-up vs GRPO vs MRPO.

The demo's VQA-RAD comparison cannot show an effect at CPU scale (one seed, a heuristic judge,
64 test records). This section runs the effects harness (:mod:`medrl.effects`) with the full
profile's task, model, warm-up and RL budget (a budget above the noise floor: docs/effects.md):
a tiny policy warmed up on phantom traces with a stated share of early errors, GRPO and MRPO
from it with the same seed, data order and budget for :data:`DEMO_SEEDS` seeds, scored by the
exact oracle on held-out phantoms, sampled (the training temperature, several samples per
question) and greedy. The report shows the three models' accuracy both ways and the early
failures per sampled output, per seed, and MRPO vs GRPO paired over the seeds.
``medrl bench effects`` is the full benchmark, with its controls and learning curves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medrl.effects.config import PROFILES

#: effects settings of the demo's section: the full profile's task, model, warm-up, RL budget and
#: evaluation, GRPO and MRPO only (no controls, curves, signatures, sweep or leaky runs), so its
#: runs are the full profile's first seeds (CPU runs repeat exactly on the same CPU type and build,
#: and the full profile's learning curves leave its runs unchanged). Two seeds keep the stage at
#: about 7 minutes on 2 idle cores (measured: the warm-up job 4 minutes, then four runs of 60 steps
#: of about 1.5 minutes each, two at a time), so the default demo stays within 25 minutes.
DEMO_SETTINGS = dict(profile="demo", seeds=2, controls=(), curve_every=0, noise_sweep=(), signatures=(), hacks=(),
                     workers=2)
#: the harness's own ``quick`` profile with two seeds and the GRPO-vs-MRPO comparison only
QUICK_SETTINGS = dict(PROFILES["quick"], profile="demo-quick", seeds=2, controls=(), curve_every=0, noise_sweep=(),
                      signatures=(), hacks=())
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


#: the paired MRPO - GRPO results the demo shows (keys of results.json's "main")
SHOWN = (("early_rate@sampled", True), ("accuracy@sampled", False), ("accuracy@greedy", False))


def summary(out: Path) -> dict | None:
    import json

    f = Path(out) / FOLDER / "results.json"
    if not f.is_file():
        return None
    main = json.loads(f.read_text()).get("main", {})
    return {k: {x: v.get(x) for x in ("n", "a_mean", "b_mean", "diff", "ci_low", "ci_high", "mde", "t_p",
                                       "wilcoxon_p")}
            for k, v in main.items()}


def phantom_section(rep: Any, ctx: Any) -> None:
    """The report section (reads ``<demo>/phantom/results.json``; absent: a note)."""
    import json

    from medrl.effects.stats import claim_sentence

    f = Path(ctx.out) / FOLDER / "results.json"
    rep.heading("Where the truth is known: warm-up, GRPO and MRPO on phantoms, over seeds")
    if not f.is_file():
        rep.paragraph("The phantom comparison has not run in this folder.", note=True)
        return
    a = json.loads(f.read_text())
    c, w = a["config"], a.get("warmup") or {}
    ws = w  # the warm-up models' traces: their realised early-error share, mean over seeds
    S = (a.get("decoding") or {}).get("sampled", "sampled")
    rep.paragraph(
        f"Synthetic medical VQA (medrl's phantom source: {', '.join(c['question_types'])} questions, "
        f"{c['image_size']} px) whose every answer and reasoning step is checked exactly by the oracle judge. For each "
        f"seed a tiny policy (hidden {c['hidden_size']}, {c['num_layers']} layers) is warmed up for {c['sft_steps']} SFT "
        f"steps on traces of which {100 * (ws.get('early_error_share') or 0):.0f}% open with a wrong first step that "
        f"carries into the answer; GRPO and MRPO then train from it for {c['rl_steps']} steps of {c['rl_prompts']} prompts x "
        f"{c['num_generations']} rollouts with the same seed, data order and budget, for {c['seeds']} seeds, and are "
        f"scored on {c['n_test']} held-out phantoms two ways: sampled ({S}; RL trains on samples, so this is where it "
        "shows) and greedy. `medrl bench effects` runs the full benchmark with its controls (a coin-flip reward, "
        "plain TRL) and learning curves (docs/effects.md).")
    arms = a.get("arms") or {}
    cols = (("accuracy@sampled", "accuracy (sampled)"), ("accuracy@greedy", "accuracy (greedy)"),
            ("early_rate@sampled", "early failures per output (sampled)"))
    rows = []
    for arm, label in (("warmup", "Warm-up (SFT)"), ("grpo", "GRPO"), ("mrpo", "MRPO")):
        v = arms.get(arm)
        if not v:
            continue
        per = [v.get(k) or [] for k, _ in cols]
        for s in range(c["seeds"]):
            rows.append([label, s, *[_pct(x[s] if s < len(x) else None) for x in per]])
    rep.table(["model", "seed", *[t for _, t in cols]], rows,
              caption=f"Held-out phantoms, scored by the exact oracle; sampled: {S}. Each seed its own records and "
                      "warm-up model")
    m = a["main"]
    rep.table(["metric (decoding)", "GRPO mean", "MRPO mean", "MRPO - GRPO", "95% CI", "detectable at 80% power",
               "paired t p", "Wilcoxon p"],
              [[t, _pct(m[k].get("a_mean")), _pct(m[k].get("b_mean")), _pp(m[k].get("diff")),
                (f"[{_pp(m[k].get('ci_low'))}, {_pp(m[k].get('ci_high'))}]" if m[k].get("ci_low") is not None
                 else "n/a (no spread over seeds)"), _pp(m[k].get("mde")).lstrip("+"), _p(m[k].get("t_p")),
                _p(m[k].get("wilcoxon_p"))]
               for k, t in ((k, dict(cols)[k]) for k, _ in SHOWN) if k in m])
    decoding = a.get("decoding") or {}
    for k, lower in SHOWN:
        if k in m:
            metric, dec = k.split("@")
            name = {"early_rate": "Early failures per output", "accuracy": "Accuracy"}[metric]
            rep.paragraph(claim_sentence(f"{name} ({decoding.get(dec, dec)})", m[k], a="GRPO", b="MRPO",
                                         lower_is_better=lower))


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _pp(v) -> str:
    return "n/a" if v is None else f"{100 * v:+.1f} pp"


def _p(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


__all__ = ["DEMO_SETTINGS", "QUICK_SETTINGS", "SHOWN", "phantom_config", "phantom_section", "run_stage", "stage_phantom",
           "summary"]


def run_stage(demo: Any, index: int, total: int) -> dict | None:
    """The demo stage: ``demo`` is the running :class:`~medrl.commands.demo_pipeline.pipeline.Demo`."""
    quick = demo.config.mode == "quick"
    c = phantom_config(quick)
    title = (f"Phantoms (known truth): warm-up, GRPO and MRPO over {c.seeds} seeds, {c.rl_steps} RL steps each, "
             f"scored by the oracle (sampled and greedy)")
    done = Path(demo.out) / FOLDER / "results.json"
    return demo.runner.run(index, total, "phantom", title, lambda: stage_phantom(demo.out, quick, demo.echo),
                           is_done=done.is_file, load=lambda: summary(Path(demo.out)))
