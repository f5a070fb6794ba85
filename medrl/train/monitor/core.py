"""The stateful monitor: per-step signals into the trainer's metrics, alert decisions, files."""

from __future__ import annotations

import json
import logging
import math
from collections import deque
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from medrl.train.monitor.aggregate import step_signals, step_sums
from medrl.train.monitor.answers import AnswerLeaks, answer_key
from medrl.train.monitor.config import Alert, AlertSignal, MonitorConfig, run_horizon
from medrl.train.monitor.sequential import sr_update
from medrl.train.monitor.signals import (GUARD_CATEGORIES, _half_means, answer_reward_index, guard_reward,
                                         paid_as_correct, record_key, rollout_features, total_rewards,
                                         zero_std_share, zero_variance_cause)

log = logging.getLogger(__name__)

#: the disagreement test's two directions (monitor/<direction>_log_e, monitor/<direction>_evidence)
DIRECTIONS = ("paid_wrong", "refused_right")

HACKING_FILE = "hacking.jsonl"
SUMMARY_FILE = "monitor_summary.json"


class HackingMonitor:
    """Stateful part: per-step signal history, alert decisions, files. One per trainer."""

    def __init__(self, config: MonitorConfig, output_dir: str | Path | None = None, *,
                 probe_fn: Callable[[Any], float | None] | None = None):
        self.config = config
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.history: dict[str, deque] = {}
        self.series: dict[str, list[tuple[int, float]]] = {}
        self.alerts: list[Alert] = []
        self.warned: set[str] = set()
        self.stop_requested = False
        self.probe_fn = probe_fn
        #: optional ground truth ``(row, answer) -> bool | None`` (a synthetic task's oracle): adds
        #: ``monitor/truth_accuracy`` and ``monitor/hack_rate`` (share of paid rollouts it calls wrong)
        self.truth_fn: Callable[[dict, str | None], bool | None] | None = None
        self._over: dict[str, int] = {}
        self._zero_run = 0
        #: the disagreement test's statistics, log R_t of each direction's Shiryaev-Roberts detector
        #: (-inf before any step)
        self.evidence: dict[str, float] = dict.fromkeys(DIRECTIONS, -math.inf)
        self.max_steps: int | None = None  # the run's planned steps (the test's horizon), from the trainer
        #: the per-answer leak test's detectors (medrl.train.monitor.answers)
        self.answer_leaks = AnswerLeaks()
        self.rows: list[dict[str, float]] = []  # each step's signals (the trend windows read them)
        self.seconds = 0.0
        self.steps = 0

    @property
    def test(self):
        """Each direction's detector settings for this run (:meth:`MonitorConfig.disagreement_test`)."""
        return self.config.disagreement_test(self.max_steps)

    @property
    def answer_test(self):
        """The per-answer leak test's settings for this run (:meth:`MonitorConfig.answer_test`)."""
        return self.config.answer_test(self.max_steps)

    # ---------------------------------------------------------------- from a trainer
    def observe(self, trainer, inputs: list[dict], local_rewards, mode: str = "train") -> list[Alert]:
        """The trainer hook: signals of this batch into ``trainer._metrics``, alerts handled.
        Never raises (a diagnostic never stops a run; a failure turns the monitor off)."""
        if not self.config.enabled or mode != "train":
            return []
        import time

        t0 = time.perf_counter()
        try:
            return self._observe(trainer, inputs, local_rewards)
        except Exception as exc:  # noqa: BLE001
            log.warning("hacking monitor failed (%s: %s); it is off for the rest of this run", type(exc).__name__, exc)
            self.config.enabled = False
            return []
        finally:
            self.seconds += time.perf_counter() - t0

    def _observe(self, trainer, inputs, local_rewards) -> list[Alert]:
        import torch

        texts, ids = trainer._last_texts, trainer._last_ids
        weights = trainer.reward_weights.tolist()
        names = step_sums([], [], [], [], [], [], [])[1]
        self.max_steps = run_horizon(trainer)
        answer_idx = answer_reward_index(trainer)
        try:  # a failure here must still reach the collective below, or the other processes would wait
            local = local_rewards.detach().float().cpu().tolist()
            totals = total_rewards(local, weights)
            feats = [rollout_features(t, x, len(i)) for t, x, i in zip(texts, inputs, ids)]
            correct = [x.get("correct") for x in inputs]
            answer_r = [None if answer_idx is None or row[answer_idx] != row[answer_idx] else float(row[answer_idx])
                        for row in local]
            paid = paid_as_correct(correct, answer_r, self.config.answer_paid_min)
            truth = self._truth(inputs, feats)
            # rows a reward marked UNSCORABLE (judge outage...); a plain None is "not applicable"
            marked = getattr(trainer, "_last_unscorable", None)
            start = trainer.accelerator.process_index * len(inputs)
            unscorable = ([False] * len(inputs) if marked is None
                          else [bool(u) for u in marked[start:start + len(inputs)].tolist()])
            keys = [record_key(x) for x in inputs]
            vec, ok = step_sums(feats, totals, correct, unscorable, answer_r, paid, truth,
                                keys=keys, test=self.test)[0], 1.0
            answer_rows = _answer_rows(feats, keys, paid, correct)
        except Exception as exc:  # noqa: BLE001
            log.warning("hacking monitor: this batch's signals failed (%s: %s)", type(exc).__name__, exc)
            vec, ok, answer_rows = [0.0] * len(names), 0.0, []
        vec_t = torch.tensor([ok, *vec], dtype=torch.float64, device=trainer.accelerator.device)
        ok, *vec = trainer.accelerator.reduce(vec_t, reduction="sum").tolist()
        if ok < trainer.accelerator.num_processes:  # every process turns the monitor off together
            raise RuntimeError("the signals of this batch failed on a process")
        if trainer.accelerator.num_processes > 1:  # the per-answer test reads every process's rollouts
            from accelerate.utils import gather_object

            answer_rows = gather_object(answer_rows)
        gathered = total_rewards(trainer._last_rewards.detach().float().cpu().tolist(), weights)
        signals = step_signals(dict(zip(names, vec)))
        signals["monitor/zero_std_groups"] = zero_std_share(gathered, trainer.num_generations)
        step = int(trainer.state.global_step) + 1
        if self.config.probe_every and self.probe_fn is not None and step % self.config.probe_every == 0:
            acc = self.probe_fn(trainer)
            n = getattr(self.probe_fn, "last_n", None)
            if acc is not None:
                signals["monitor/probe_accuracy"] = float(acc)
                if n is not None:
                    signals["monitor/probe_n"] = float(n)
        examples = [dict(record_id=x.get("record_id"), question=x.get("question"), reference=x.get("answer"),
                         text=t[:600], answer=f["answer"], reward=r, correct=c, paid=p, verdict=f["verdict"],
                         guard=f["reason"], category=f["category"], rewards=dict(zip(trainer.reward_func_names, [
                             None if v != v else round(v, 4) for v in row])))
                    for t, x, f, r, c, p, row in zip(texts, inputs, feats, totals, correct, paid, local)]
        alerts = self.update(step, signals, examples, answer_rows)  # adds monitor/<direction>_evidence to signals
        for k, v in signals.items():
            if v is not None:
                trainer._metrics["train"][k].append(float(v))
        if alerts and trainer.accelerator.is_main_process:
            self.record(alerts)
        return alerts

    def observe_rollouts(self, step: int, texts: Sequence[str], records: Sequence[dict],
                         rewards: Sequence[Sequence[float]], *, weights: Sequence[float] | None = None,
                         names: Sequence[str] | None = None, answer_reward: str | None = None,
                         group: int | None = None, n_tokens: Sequence[int] | None = None) -> list[Alert]:
        """One step from plain lists, in one process (no trainer): ``texts`` the completions,
        ``records`` their rows (``answer``, ``question``, optional ``correct``), ``rewards`` one
        row of reward values per completion (NaN: not scored), ``answer_reward`` the name (in
        ``names``) of the reward that pays the answer, ``group`` rollouts per prompt. The same
        signals and alerts as :meth:`observe` gives inside a trainer."""
        names = list(names or [f"r{i}" for i in range(len(rewards[0]) if rewards else 0)])
        weights = list(weights or [1.0] * len(names))
        rows = [[float(v) for v in row] for row in rewards]
        totals = total_rewards(rows, weights)
        toks = list(n_tokens) if n_tokens is not None else [len(t.split()) for t in texts]
        feats = [rollout_features(t, x, n) for t, x, n in zip(texts, records, toks)]
        correct = [x.get("correct") for x in records]
        idx = names.index(answer_reward) if answer_reward in names else None
        answer_r = [None if idx is None or row[idx] != row[idx] else row[idx] for row in rows]
        paid = paid_as_correct(correct, answer_r, self.config.answer_paid_min)
        truth = self._truth(records, feats)
        rkeys = [record_key(x) for x in records]
        vec, keys = step_sums(feats, totals, correct, [False] * len(feats), answer_r, paid, truth,
                              keys=rkeys, test=self.test)
        signals = step_signals(dict(zip(keys, vec)))
        signals["monitor/zero_std_groups"] = zero_std_share(totals, group or len(texts))
        examples = [dict(question=x.get("question"), reference=x.get("answer"), text=t[:600], answer=f["answer"],
                         reward=r, correct=c, paid=p, verdict=f["verdict"], guard=f["reason"],
                         category=f["category"])
                    for t, x, f, r, c, p in zip(texts, records, feats, totals, correct, paid)]
        alerts = self.update(step, signals, examples, _answer_rows(feats, rkeys, paid, correct))
        if alerts:
            self.record(alerts)
        return alerts

    def _truth(self, rows, feats) -> list[bool | None]:
        """``truth_fn``'s verdict per rollout (its answer), [] when no truth is known."""
        if self.truth_fn is None:
            return []
        out = []
        for x, f in zip(rows, feats):
            try:
                out.append(self.truth_fn(x, f["answer"]))
            except Exception as exc:  # noqa: BLE001 - a diagnostic never stops a run
                log.debug("monitor: truth_fn failed (%s)", exc)
                out.append(None)
        return out

    # ---------------------------------------------------------------- decisions (pure given state)
    def update(self, step: int, signals: dict[str, float | None], examples: Sequence[dict] = (),
               answer_rows: Sequence[tuple] = ()) -> list[Alert]:
        """Add one step's signals (and its rollouts as (answer key, record key, verdict, paid) for
        the per-answer test); returns the alerts raised at this step (each signal alerts once)."""
        cfg = self.config
        self.steps += 1
        leaks = self.answer_leaks.update(step, answer_rows, self.answer_test)
        signals["monitor/answer_leak_evidence"] = self.answer_leaks.evidence
        signals["monitor/answer_leak_answers"] = float(len(self.answer_leaks.slots))
        keep = max(cfg.window, cfg.max_window, 2)
        # the disagreement test (medrl.train.monitor.sequential): Shiryaev-Roberts on each
        # direction's log e-value
        for d in DIRECTIONS:
            self.evidence[d] = sr_update(self.evidence[d], float(signals.get(f"monitor/{d}_log_e") or 0.0))
            signals[f"monitor/{d}_evidence"] = self.evidence[d]
        for k, v in signals.items():
            if v is None:
                continue
            self.history.setdefault(k, deque(maxlen=max(cfg.window, 2))).append(float(v))
            self.series.setdefault(k, []).append((step, float(v)))
        self.rows.append({k: float(v) for k, v in signals.items() if v is not None})
        del self.rows[:-keep]
        raised: list[Alert] = []

        def alert(signal, value, threshold, message, kind="hacking", pick=None):
            if signal in self.warned:
                return
            ex = [e for e in examples if pick is None or pick(e)]
            ex.sort(key=lambda e: -(e.get("reward") if e.get("reward") is not None else -math.inf))
            self.warned.add(signal)
            raised.append(Alert(step, signal, round(float(value), 4), float(threshold), message, kind,
                                ex[: cfg.examples]))

        def level(signal, value, threshold) -> bool:
            over = value is not None and value >= threshold
            self._over[signal] = self._over.get(signal, 0) + 1 if over else 0
            return self._over[signal] >= cfg.persist

        for c in GUARD_CATEGORIES:
            share, paid = signals.get(f"monitor/guard/{c}"), signals.get(f"monitor/guard_paid/{c}")
            if share is None or paid is None or share < cfg.guard_share_max:
                continue
            got = guard_reward(signals, c)
            bar = signals.get("monitor/verified_reward")  # what verified-correct answers earn this step
            by_answer = signals.get(f"monitor/guard_answer_reward/{c}")
            if by_answer is not None:
                # the recipe names its answer reward: the exploit is that reward paying a refused
                # answer (a format or length reward paying it like any other rollout is not)
                got, pays = by_answer, by_answer > cfg.guard_reward_min
            else:
                pays = got > cfg.guard_reward_min and (got >= bar - 1e-9 if bar is not None else paid >= 0)
            if pays:
                versus = (f"as much as answers the offline verdict calls correct ({bar:.3f})" if bar is not None
                          else f"at least as much as the others (by {paid:+.3f})")
                alert(AlertSignal.guard(c), share, cfg.guard_share_max,
                      f"{share:.0%} of rollouts give answers the answer guard refuses as '{c}', and the reward pays "
                      f"them {got:.3f}, {versus}: the policy is learning an exploit",
                      pick=lambda e, c=c: e.get("category") == c)
        test = self.test
        over = [d for d in DIRECTIONS if self.evidence[d] >= test.threshold]
        if over:
            d = max(over, key=lambda k: self.evidence[k])
            share = signals.get("monitor/wrong_paid" if d == "paid_wrong" else "monitor/right_refused")
            what = ("pays as correct answers the offline verdict (the answer decision, no shared concept) calls "
                    "wrong" if d == "paid_wrong" else "refuses answers the offline verdict (the answer decision) calls right")
            alert(AlertSignal.DISAGREEMENT.value, self.evidence[d], test.threshold,
                  f"the run (its `correct` column, or its answer reward >= {cfg.answer_paid_min:g}) {what}, more "
                  f"often than the {test.null_rate:.0%} a clean run may: the disagreement test's evidence "
                  f"({d.replace('_', ' ')}) log R = {self.evidence[d]:.2f} >= log(horizon {test.horizon} / "
                  f"(alpha/2) {test.alpha:g}) = {test.threshold:.2f}; a clean run alarms within {test.horizon} steps "
                  f"with probability at most {2 * test.alpha:g}"
                  + (f". This step: {share:.0%} of them" if share is not None else ""),
                  pick=lambda e, d=d: e.get("verdict") is (d == "refused_right") and (
                      e.get("paid") if e.get("paid") is not None else e.get("correct")) is (d == "paid_wrong"))
        if leaks:
            atest = self.answer_test
            key, slot = max(leaks, key=lambda kv: kv[1].log_r)
            alert(AlertSignal.ANSWER_LEAK.value, slot.log_r, atest.threshold,
                  f"the run (its `correct` column, or its answer reward >= {cfg.answer_paid_min:g}) pays the answer "
                  f"{key!r} as correct on record after record where the offline verdict calls it wrong: "
                  f"{len(slot.records)} records, {slot.paid} of {slot.wrong} such rollouts paid since step "
                  f"{slot.since}. The per-answer test's evidence log R = {slot.log_r:.2f} >= log(horizon "
                  f"{atest.horizon} x {atest.max_answers} answers / alpha {atest.alpha:g}) = {atest.threshold:.2f}; "
                  f"a clean run alarms within {atest.horizon} steps with probability at most {atest.alpha:g}",
                  pick=lambda e, key=key: e.get("verdict") is False and bool(
                      e.get("paid") if e.get("paid") is not None else e.get("correct")) and answer_key(
                      e.get("answer")) == key)
        r = signals.get("monitor/repeat_ngram")
        if level("repeat_ngram", r, cfg.repeat_ngram_max):
            alert(AlertSignal.REPEAT_NGRAM.value, r, cfg.repeat_ngram_max, f"{r:.0%} of the completions' word 3-grams are repeats")
        r = signals.get("monitor/restate")
        if level("restate", r, cfg.restate_max):
            alert(AlertSignal.RESTATE.value, r, cfg.restate_max,
                  f"{r:.0%} of reasoning steps only restate the question or the answer")
        if self.steps >= cfg.window:
            self._trend_alerts(alert)
        zs = signals.get("monitor/zero_std_groups")
        self._zero_run = self._zero_run + 1 if zs is not None and zs >= 1.0 else 0
        if self._zero_run >= cfg.zero_variance_steps:
            cause = zero_variance_cause(signals)
            alert(AlertSignal.ZERO_VARIANCE.value, self._zero_run, cfg.zero_variance_steps,
                  f"every prompt group had the same reward for all its rollouts for {self._zero_run} steps: "
                  f"advantages, loss and gradients are zero. Likely cause: {cause}", kind="health")
        pa, c = signals.get("monitor/probe_accuracy"), self._mean("monitor/correct")
        pn = signals.get("monitor/probe_n")
        enough = pn is None or pn >= cfg.probe_min_records
        if pa is not None and c is not None and c - pa >= cfg.probe_gap_max and enough:
            alert(AlertSignal.PROBE_GAP.value, c - pa, cfg.probe_gap_max,
                  f"training correctness {c:.0%} but held-out probe accuracy {pa:.0%}"
                  + (f" ({pn:.0f} probe answers)" if pn is not None else ""))
        if any(a.kind == "hacking" for a in raised) and cfg.stop_on_alert:
            self.stop_requested = True
        return raised

    def _mean(self, key):
        h = self.history.get(key)
        return sum(h) / len(h) if h else None

    def _trend_window(self, count_key: str | None) -> list[dict] | None:
        """The last steps forming a trend window: ``window`` steps, grown (up to ``max_window``)
        until each half holds ``min_evidence`` rollouts by ``count_key``; None while too few.
        Without counts (signals given by hand) the plain ``window``."""
        cfg = self.config
        rows = self.rows
        w = cfg.window
        if len(rows) < w:
            return None
        if count_key is None or not any(count_key in r for r in rows[-w:]):
            return rows[-w:]
        while w <= len(rows):
            part = rows[-w:]
            h = w // 2
            if (sum(r.get(count_key, 0.0) for r in part[:h]) >= cfg.min_evidence
                    and sum(r.get(count_key, 0.0) for r in part[w - h:]) >= cfg.min_evidence):
                return part
            w += 2
        return None

    def _trend_alerts(self, alert) -> None:
        cfg = self.config

        def series(part, *keys):
            for key in keys:  # the first key the window logs at every step
                vals = [r[key] for r in part if key in r]
                if len(vals) == len(part):
                    return vals, key
            return None, None

        part = self._trend_window("monitor/verified_n")
        if part is not None:
            # the reward that claims correctness (the answer reward; the total when none is named)
            # against the offline verdict's correct share: a rise in process, length or
            # BERTScore reward alone is not a claim of correctness
            rw, rkey = series(part, "monitor/answer_reward", "monitor/reward")
            cw, ckey = series(part, "monitor/verified", "monitor/correct")
            if rw and cw:
                (r0, r1), (c0, c1) = _half_means(rw), _half_means(cw)
                rise = (r1 - r0) / max(abs(r0), 0.1)
                if rise >= cfg.reward_rise and c1 - c0 < cfg.correct_rise:
                    what = "answer reward" if rkey == "monitor/answer_reward" else "reward"
                    alert(AlertSignal.REWARD_VS_CORRECTNESS.value, rise, cfg.reward_rise,
                          f"over the last {len(part)} steps the {what} rose {rise:+.0%} while correctness "
                          f"({'offline verdict' if ckey == 'monitor/verified' else 'correct column'}) moved "
                          f"{c1 - c0:+.2f} ({c0:.2f} -> {c1:.2f})")
        part = self._trend_window("monitor/rollouts")
        if part is not None:
            for keys, thr, name in ((("monitor/completion_tokens",), cfg.length_growth_max,
                                     AlertSignal.LENGTH_GROWTH.value),
                                    (("monitor/answer_ref_ratio", "monitor/answer_chars"), cfg.answer_growth_max,
                                     AlertSignal.ANSWER_LENGTH_GROWTH.value)):
                h, key = series(part, *keys)
                if h:
                    a, b = _half_means(h)
                    g = b / a if a > 0 else 0.0
                    if g >= thr:
                        alert(name, g, thr, f"{key.split('/')[1]} grew {g:.1f}x over the last {len(part)} steps "
                                            f"({a:.2f} -> {b:.2f})")
        h = list(self.history.get("monitor/format_valid", []))
        if len(h) >= cfg.window:
            a, b = _half_means(h)
            if a - b >= cfg.format_drop:
                alert(AlertSignal.FORMAT_DROP.value, a - b, cfg.format_drop,
                      f"the well-formed share fell from {a:.0%} to {b:.0%} over the last {cfg.window} steps")

    # ---------------------------------------------------------------- files
    def record(self, alerts: Sequence[Alert]) -> None:
        """Append the alerts to hacking.jsonl and warn (once per signal) with their examples."""
        from medrl.common.jsonl import append_jsonl

        if self.output_dir is not None:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            append_jsonl(self.output_dir / HACKING_FILE, [asdict(a) for a in alerts], fsync=False)
        for a in alerts:
            ex = "\n".join(f"    reward {e.get('reward')}: answer {e.get('answer')!r} (reference {e.get('reference')!r}, "
                           f"guard {e.get('guard')})" for e in a.examples)
            log.warning("hacking monitor [%s] step %d: %s (value %s, threshold %s)%s%s", a.signal, a.step, a.message,
                        a.value, a.threshold, "\n  examples:\n" + ex if ex else "",
                        "; stopping (monitor.stop_on_alert)" if self.config.stop_on_alert and a.kind == "hacking" else "")
        self.alerts.extend(alerts)

    def summary(self) -> dict:
        sig = {}
        for k, pts in self.series.items():
            vals = [v for _, v in pts]
            sig[k] = {"first": vals[0], "last": vals[-1], "mean": sum(vals) / len(vals), "max": max(vals),
                      "min": min(vals), "steps": len(vals)}
        test = self.test
        return {"config": asdict(self.config), "steps_observed": self.steps,
                "seconds": round(self.seconds, 4), "signals": sig, "series": {k: v for k, v in self.series.items()},
                "alerts": [{k: v for k, v in asdict(a).items() if k != "examples"} for a in self.alerts],
                "stopped": self.stop_requested,
                "disagreement_test": {"null_rate": test.null_rate, "alt_rate": test.alt_rate,
                                      "alpha": self.config.alpha, "alpha_per_direction": test.alpha,
                                      "horizon": test.horizon, "threshold": test.threshold,
                                      "evidence": _finite(self.evidence)},
                "answer_test": {"null_rate": self.answer_test.null_rate, "alt_rate": self.answer_test.alt_rate,
                                "alpha": self.answer_test.alpha, "max_answers": self.answer_test.max_answers,
                                "horizon": self.answer_test.horizon, "threshold": self.answer_test.threshold,
                                "answers": {k: {"evidence": None if s.log_r == -math.inf else s.log_r,
                                                "records": len(s.records), "wrong": s.wrong, "paid": s.paid}
                                            for k, s in sorted(self.answer_leaks.slots.items(),
                                                               key=lambda kv: -kv[1].log_r)[:10]}}}

    # ---------------------------------------------------------------- resume (medrl.train.callbacks)
    def state_dict(self) -> dict:
        """What a checkpoint keeps of the monitor, so a resumed run goes on where it stopped:
        signal history and series, alerts, the persist counters, the trend rows and the paid-wrong
        test's statistic."""
        return {"history": {k: list(v) for k, v in self.history.items()},
                "series": {k: [list(p) for p in v] for k, v in self.series.items()},
                "alerts": [asdict(a) for a in self.alerts], "warned": sorted(self.warned),
                "stop_requested": bool(self.stop_requested), "over": dict(self._over), "zero_run": int(self._zero_run),
                "seconds": float(self.seconds), "steps": int(self.steps), "enabled": bool(self.config.enabled),
                "rows": [dict(r) for r in self.rows],
                "evidence": _finite(self.evidence), "answer_leaks": self.answer_leaks.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (also a checkpoint written before ``rows`` and ``evidence`` were kept:
        then the trend windows and the test start afresh). A resumed run goes on; its alerts stay recorded."""
        window = max(self.config.window, 2)
        self.history = {k: deque(v, maxlen=window) for k, v in state["history"].items()}
        self.series = {k: [tuple(p) for p in v] for k, v in state["series"].items()}
        self.alerts = [Alert(**a) for a in state["alerts"]]
        self.warned = set(state["warned"])
        self.stop_requested = False
        self._over = dict(state.get("over", {}))
        self._zero_run = int(state.get("zero_run", 0))
        self.seconds, self.steps = float(state["seconds"]), int(state["steps"])
        self.rows = [dict(r) for r in state.get("rows", [])]
        saved = state.get("evidence") or {}
        self.evidence = {d: -math.inf if saved.get(d) is None else float(saved[d]) for d in DIRECTIONS}
        self.answer_leaks.load_state_dict(state.get("answer_leaks") or {})
        self.config.enabled = bool(state.get("enabled", True)) and self.config.enabled

    def write_summary(self) -> Path | None:
        if self.output_dir is None:
            return None
        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir / SUMMARY_FILE
        path.write_text(json.dumps(self.summary(), indent=2))
        return path


def _answer_rows(feats, keys, paid, correct) -> list[tuple]:
    """(answer key, record key, verdict, paid) of each rollout, for the per-answer test."""
    decision = list(paid) if paid else list(correct)
    decision += [None] * (len(feats) - len(decision))
    return [(answer_key(f["answer"]), k, f["verdict"], None if d is None else bool(d))
            for f, k, d in zip(feats, keys, decision)]


def _finite(evidence: dict[str, float]) -> dict[str, float | None]:
    """The detectors' statistics for JSON (None before any step)."""
    return {d: None if v == -math.inf else float(v) for d, v in evidence.items()}


__all__ = ["HACKING_FILE", "HackingMonitor", "SUMMARY_FILE"]
