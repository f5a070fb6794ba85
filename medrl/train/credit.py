"""Credit evidence: a few rollouts per logged step with the token advantages the loss used.

TRL and verl log one reward and one advantage per sequence. MRPO's claim (MRPO
Eq. 7, App. D.2-D.3) is about *where* in a rollout the signal lands: on the tokens of invalid
steps, exponentially more on early ones, only when the answer is wrong. To make that visible,
:class:`CreditWriter` appends to ``<run>/credit.jsonl``, every ``algorithm.log_credit_every``
optimizer steps (0 = off), ``algorithm.log_credit_rollouts`` rollouts of the batch (the first
ones of this process, i.e. whole prompt groups in TRL's order, so two runs with the same seed
and data order log the same prompts). One JSON object per rollout:

``step``            the optimizer step the batch trains (1-based, as in ``metrics.jsonl``)
``rollout``/``group``  index of the rollout in this process's batch and of its prompt group
``estimator``       ``algorithm.advantage`` (``grpo``: TRL's sequence advantage; ``mrpo``: token
                    advantages), with the settings the providing method records
                    (:meth:`medrl.methods.Method.credit_fields`; MRPO: ``tau``/``shaping``/``strategy``)
``record_id``/``question``/``reference``  the record (reference = its ``answer`` column)
``text``/``answer`` the decoded completion and its ``<answer>`` (None when absent)
``tokens``/``offsets``  each generated token's text piece ``text[s:e]`` and ``(s, e)``
                    (end-of-sequence tokens are ``""`` at the end of the text)
``steps``           reasoning steps: character span, token span ``[token_start, token_end)``
                    and ``valid`` (the judge's verdict, None when not judged)
``rewards``/``r_ans``  every reward function's value for the rollout (None = unscorable) and
                    the answer reward R_ans (a method's ``answer_reward``, else
                    ``algorithm.log_rewards.answer``)
``advantage``       the sequence advantage A_i (before MRPO shaping)
``token_advantages`` the advantage of each generated token exactly as handed to the loss
                    (the (B, T) tensor's row for MRPO; A_i repeated for GRPO)
``in_loss``         False when the row's completion mask is all zero (an excluded rollout)

Size: ``rollouts x completion tokens`` numbers per logged step (4 x 128 tokens: about 15 kB);
written by the main process only. ``medrl analyze credit RUN`` renders it
(:mod:`medrl.eval.credit_report`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger(__name__)

CREDIT_FILE = "credit.jsonl"


def _num(x) -> float | None:
    """A float, or None for NaN/None (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return None if x != x else x


def rollout_row(
    *,
    text: str,
    offsets: Sequence[tuple[int, int]],
    token_advantages: Sequence[float],
    advantage: float,
    steps: Sequence[Any] | None = None,
    step_token_spans: Sequence[tuple[int, int]] | None = None,
    step_valid: Sequence[bool] | None = None,
    rewards: dict[str, float | None] | None = None,
    r_ans: float | None = None,
    in_loss: bool = True,
    **fields: Any,
) -> dict:
    """One ``credit.jsonl`` row (see the module docstring); pure.

    ``offsets`` and ``token_advantages`` have one entry per generated token (same length);
    ``steps`` are :class:`medrl.types.Step` (character spans into ``text``) with their token
    spans and validities (``None`` entries allowed: no verdicts). ``fields`` (step, rollout,
    record_id, ...) are copied in front.
    """
    from medrl.answers.completion import parse_response

    offsets = [(int(a), int(b)) for a, b in offsets]
    adv = [float(a) for a in token_advantages]
    if len(adv) != len(offsets):
        raise ValueError(f"credit row: {len(adv)} token advantages for {len(offsets)} token offsets")
    step_rows = []
    for k, st in enumerate(steps or []):
        span = step_token_spans[k] if step_token_spans is not None and k < len(step_token_spans) else None
        valid = step_valid[k] if step_valid is not None and len(step_valid) == len(steps) else None
        step_rows.append({
            "start": int(st.start), "end": int(st.end),
            "token_start": None if span is None else int(span[0]),
            "token_end": None if span is None else int(span[1]),
            "valid": None if valid is None else bool(valid),
        })
    return {
        **fields,
        "text": text,
        "answer": parse_response(text).answer,
        "tokens": [text[a:b] for a, b in offsets],
        "offsets": [[a, b] for a, b in offsets],
        "steps": step_rows,
        "rewards": {k: _num(v) for k, v in (rewards or {}).items()},
        "r_ans": _num(r_ans),
        "advantage": float(advantage),
        "token_advantages": adv,
        "in_loss": bool(in_loss),
    }


class CreditWriter:
    """Decides which steps are logged and appends their rows to ``<output_dir>/credit.jsonl``.

    ``every`` optimizer steps (0 = never): the first batch (step 1) and then the first batch at
    or after every multiple of ``every`` (TRL generates once per ``steps_per_generation``
    steps, so a multiple may fall inside a generation batch). At most ``rollouts`` rows per
    logged step. A resumed run (first batch at a step > 0) keeps the uninterrupted schedule.
    """

    def __init__(self, output_dir: str | os.PathLike, every: int = 10, rollouts: int = 4):
        for name, v in (("log_credit_every", every), ("log_credit_rollouts", rollouts)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"algorithm.{name} must be a non-negative int, got {v!r}")
        self.path = Path(output_dir) / CREDIT_FILE
        self.every, self.rollouts = every, rollouts
        self._next = 0
        self._last = -1

    def due(self, global_step: int) -> bool:
        """True when the batch generated at ``global_step`` (completed steps) is to be logged."""
        if global_step < self._last:  # a new train() call on the same trainer starts over
            self._next = 0
        elif self._last < 0 < global_step and self.every > 0:  # resumed: the schedule an uninterrupted run keeps
            self._next = -(-global_step // self.every) * self.every
        self._last = global_step
        if self.every <= 0 or self.rollouts <= 0 or global_step < self._next:
            return False
        self._next = (global_step // self.every + 1) * self.every
        return True

    def log(self, *args, **kwargs) -> list[dict]:
        """:meth:`log_batch`, but a failure (an odd tokenizer, a full disk) only warns and turns
        credit logging off: a diagnostic never stops a training run."""
        try:
            return self.log_batch(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - diagnostics only; the run goes on
            log.warning("credit logging failed (%s: %s); %s is no longer written in this run",
                        type(exc).__name__, exc, self.path)
            self.every = 0
            return []

    def log_batch(self, trainer, inputs: list[dict], out: dict, seq_advantages, local_rewards,
                  step_valid: Sequence[Sequence[bool] | None] | None, steps: Sequence | None = None) -> list[dict]:
        """Rows of the first ``rollouts`` rollouts of this batch, appended to the file.

        ``out`` is what ``_generate_and_score_completions`` returns (its ``advantages`` are
        what ``_compute_loss`` receives), ``seq_advantages`` the (B,) advantages before MRPO
        shaping, ``local_rewards`` this process's (B, R) reward matrix, ``step_valid`` the
        process reward's step validities and ``steps`` its steps (``MedBatch.steps``; None: the
        completion's sentences). Reads the texts and ids the trainer kept from scoring this batch.
        """
        from medrl.common.jsonl import append_jsonl
        from medrl.answers.completion import completion_steps, completion_token_offsets, step_token_spans

        alg = trainer.medrl_algorithm
        names = list(trainer.reward_func_names)
        methods = getattr(trainer, "methods", [])
        answer = [m.answer_reward for m in methods if m.answer_reward in names]
        ans_name = answer[0] if answer else (alg.get("log_rewards") or {}).get("answer")
        ans_idx = names.index(ans_name) if ans_name in names else None
        owner = next((m for m in methods if m.advantage == alg["advantage"]), None)
        steps_all = steps
        adv = out["advantages"].detach()
        seq = seq_advantages.detach()
        mask = out["completion_mask"]
        n = min(self.rollouts, adv.shape[0])
        rewards = local_rewards[:n].detach().float().cpu().tolist()
        seq = seq[:n].float().cpu().tolist()
        in_loss = (mask[:n].sum(dim=1) > 0).cpu().tolist()
        group = getattr(trainer, "num_generations", 1) or 1
        step = int(trainer.state.global_step) + 1
        # the estimator's name and the settings its method records (credit_fields; MRPO: tau, shaping, strategy)
        common = {"step": step, "estimator": alg["advantage"], **(owner.credit_fields() if owner else {})}
        rows = []
        for i in range(n):
            text, ids = trainer._last_texts[i], trainer._last_ids[i]
            length = min(len(ids), adv.shape[-1]) if adv.dim() == 2 else len(ids)
            token_adv = adv[i, :length] if adv.dim() == 2 else adv[i].expand(length)
            offsets = completion_token_offsets(trainer._tokenizer, text, ids)[:length]
            steps = steps_all[i] if steps_all is not None and i < len(steps_all) and steps_all[i] is not None \
                else completion_steps(text)
            valid = step_valid[i] if step_valid is not None and i < len(step_valid) else None
            try:
                spans = step_token_spans(text, list(steps), offsets) if steps else []
            except ValueError:
                spans = None
            rec = inputs[i] if i < len(inputs) else {}
            rows.append(rollout_row(
                text=text, offsets=offsets, token_advantages=token_adv.float().cpu().tolist(),
                advantage=seq[i], steps=steps, step_token_spans=spans, step_valid=valid,
                rewards=dict(zip(names, rewards[i])), r_ans=None if ans_idx is None else rewards[i][ans_idx],
                in_loss=in_loss[i],
                **common, rollout=i, group=i // group, record_id=rec.get("record_id"),
                question=rec.get("question"), reference=rec.get("answer"),
            ))
        if rows:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_jsonl(self.path, rows, fsync=False)
        return rows


__all__ = ["CREDIT_FILE", "CreditWriter", "rollout_row"]
