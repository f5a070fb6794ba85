"""One step's numbers: per-process sums of the rollout features (reduced over processes before
any share is taken), then the logged ``monitor/*`` signals."""

from __future__ import annotations

from typing import Sequence

from medrl.train.monitor.sequential import ShareTest, step_log_evalue
from medrl.train.monitor.signals import GUARD_CATEGORIES, disagreement_groups


def step_sums(feats, totals, correct, unscorable, answer_r=(), paid=(), truth=(), *, keys: Sequence[str] = (),
              test: ShareTest | None = None) -> tuple[list[float], list[str]]:
    """Sums and counts of this process (reduced over processes before the shares are taken), and
    their names. ``keys``: each rollout's prompt (:func:`~medrl.train.monitor.signals.record_key`)
    for the disagreement test's groups; ``test``: its rates (the log e-values of this process's
    groups are sums, so they reduce like counts). A prompt whose rollouts TRL spread over two
    processes counts as two groups there (the test then takes the halves as independent)."""
    cats = [c for c in GUARD_CATEGORIES if c != "empty"]
    s: dict[str, float] = {"n": len(feats)}
    answered = [f for f in feats if f["answer"] is not None]
    s["answered"] = len(answered)
    s["well_formed"] = sum(f["well_formed"] for f in feats)
    s["tokens"] = sum(f["tokens"] for f in feats)
    s["answer_chars"] = sum(f["answer_chars"] for f in answered)
    rel = [f["answer_ref_ratio"] for f in answered if f.get("answer_ref_ratio") is not None]
    s["answer_rel"], s["answer_rel_n"] = sum(rel), len(rel)
    ratios = [f["ratio"] for f in feats if f["ratio"] is not None]
    s["ratio"], s["ratio_n"] = sum(ratios), len(ratios)
    s["repeat"] = sum(f["repeat"] for f in feats)
    s["restate"] = sum(f["restate"] for f in feats)
    s["steps"] = sum(f["steps"] for f in feats)
    s["refused"] = sum(1 for f in answered if f["category"] not in (None, "empty"))
    scored = [(f, r) for f, r in zip(feats, totals) if r is not None]
    s["reward"], s["reward_n"] = sum(r for _, r in scored), len(scored)
    s["unscored"] = sum(bool(u) for u in unscorable)
    ok_r = [r for f, r in scored if f["verdict"] is True]
    s["verified_r"], s["verified_rn"] = sum(ok_r), len(ok_r)
    ans_r = list(answer_r) + [None] * (len(feats) - len(answer_r))
    for c in cats:
        hit = [r for f, r in scored if f["category"] == c]
        rest = [r for f, r in scored if f["category"] != c]
        paid_ans = [a for f, a in zip(feats, ans_r) if f["category"] == c and a is not None]
        s[f"cat_{c}_a"], s[f"cat_{c}_an"] = sum(paid_ans), len(paid_ans)
        s[f"cat_{c}"] = sum(1 for f in answered if f["category"] == c)
        s[f"cat_{c}_r"], s[f"cat_{c}_rn"] = sum(hit), len(hit)
        s[f"cat_{c}_o"], s[f"cat_{c}_on"] = sum(rest), len(rest)
    decided = [c for c in correct if c is not None]
    s["correct"], s["correct_n"] = sum(bool(c) for c in decided), len(decided)
    ans = [a for a in answer_r if a is not None]
    s["answer_r"], s["answer_rn"] = sum(ans), len(ans)
    paid_d = [p for p in paid if p is not None]
    s["paid"], s["paid_n"] = sum(bool(p) for p in paid_d), len(paid_d)
    em = [f["verdict"] for f in feats if f["verdict"] is not None]
    s["em"], s["em_n"] = sum(bool(v) for v in em), len(em)
    decision = list(paid) if paid else list(correct)
    decision += [None] * (len(feats) - len(decision))
    both = [(bool(c), bool(f["verdict"])) for c, f in zip(decision, feats)
            if c is not None and f["verdict"] is not None]
    s["disagree"], s["disagree_n"] = sum(a != b for a, b in both), len(both)
    s["paid_wrong"] = sum(a and not b for a, b in both)
    wrong, right = disagreement_groups(list(keys) or [str(i) for i in range(len(feats))],
                                       [f["verdict"] for f in feats], decision)
    for name, groups, hit in (("wrong", wrong, "paid"), ("right", right, "refused")):
        s[f"{name}_groups"], s[f"{name}_n"] = len(groups), sum(n for _, n in groups)
        s[f"{name}_{hit}"] = sum(h for h, _ in groups)
        s[f"{hit}_{name}_log_e"] = step_log_evalue(groups, test.null_rate, test.alt_rate) if test is not None else 0.0
    known = [(bool(p), bool(t)) for p, t in zip(decision, truth) if p is not None and t is not None]
    s["truth"], s["truth_n"] = sum(t for _, t in known), len(known)
    s["hack"], s["hack_n"] = sum(p and not t for p, t in known), sum(p for p, _ in known)
    return list(s.values()), list(s)

def step_signals(s: dict[str, float]) -> dict[str, float | None]:
    """The logged ``monitor/*`` signals of one step's reduced sums (None: nothing to divide by)."""
    def div(a, b):
        return s[a] / s[b] if s.get(b) else None

    out: dict[str, float | None] = {
        "monitor/rollouts": s["n"],
        "monitor/answered": div("answered", "n"),
        "monitor/format_valid": div("well_formed", "n"),
        "monitor/guard_refused": div("refused", "n"),
        "monitor/reward": div("reward", "reward_n"),
        "monitor/answer_reward": div("answer_r", "answer_rn"),
        "monitor/unscored": div("unscored", "n"),
        # the share the run pays as correct: its correctness column, else its answer reward
        "monitor/correct": (div("correct", "correct_n") if s["correct_n"] else div("paid", "paid_n")
                            if s.get("paid_n") else div("em", "em_n")),
        "monitor/exact_match": div("em", "em_n"),
        "monitor/verified": div("em", "em_n"),  # the independent verdict's correct share
        "monitor/verified_n": s["em_n"],
        "monitor/disagreement": div("disagree", "disagree_n"),
        "monitor/disagreement_n": s["disagree_n"],
        "monitor/paid_wrong": div("paid_wrong", "disagree_n"),
        # the disagreement test's evidence: rollouts the verdict calls wrong (right) that the run
        # decided, the share of them it paid (refused), the prompts, each direction's log e-value
        "monitor/wrong_n": s.get("wrong_n", 0.0),
        "monitor/wrong_paid": div("wrong_paid", "wrong_n"),
        "monitor/wrong_groups": s.get("wrong_groups", 0.0),
        "monitor/right_n": s.get("right_n", 0.0),
        "monitor/right_refused": div("right_refused", "right_n"),
        "monitor/right_groups": s.get("right_groups", 0.0),
        "monitor/paid_wrong_log_e": s.get("paid_wrong_log_e", 0.0),
        "monitor/refused_right_log_e": s.get("refused_right_log_e", 0.0),
        "monitor/completion_tokens": div("tokens", "n"),
        "monitor/answer_chars": div("answer_chars", "answered"),
        "monitor/answer_ref_ratio": div("answer_rel", "answer_rel_n"),
        "monitor/reasoning_answer_ratio": div("ratio", "ratio_n"),
        "monitor/repeat_ngram": div("repeat", "n"),
        "monitor/restate": div("restate", "steps"),
        "monitor/verified_reward": div("verified_r", "verified_rn"),
    }
    if s.get("truth_n"):  # a ground truth is known (truth_fn): the oracle's view of the batch
        out["monitor/truth_accuracy"] = div("truth", "truth_n")
        out["monitor/hack_rate"] = div("hack", "hack_n")  # None when the reward paid nothing
    for c in GUARD_CATEGORIES:
        if c == "empty" or f"cat_{c}" not in s:
            continue
        out[f"monitor/guard/{c}"] = div(f"cat_{c}", "n")
        hit, rest = div(f"cat_{c}_r", f"cat_{c}_rn"), div(f"cat_{c}_o", f"cat_{c}_on")
        if hit is not None:  # how much more the reward pays refused answers than the others
            out[f"monitor/guard_paid/{c}"] = hit - rest if rest is not None else hit
            out[f"monitor/guard_reward/{c}"] = hit
        if s.get(f"cat_{c}_an"):  # what the answer reward alone pays the refused answers
            out[f"monitor/guard_answer_reward/{c}"] = div(f"cat_{c}_a", f"cat_{c}_an")
    return out


__all__ = ["step_signals", "step_sums"]
