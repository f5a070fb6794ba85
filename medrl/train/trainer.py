"""``MedGRPOTrainer``: TRL's ``GRPOTrainer`` with named hook points for the papers' methods.

TRL does the rollouts, rewards, group advantages, loss variants, KL, vLLM and scale-out. The
methods (one file each under :mod:`medrl.methods`) plug in through hooks called at fixed points
of one GRPO step (:data:`medrl.methods.HOOK_ORDER`); data passes between them in the typed
:class:`medrl.methods.MedBatch`, and each hook sees the run through a
:class:`medrl.methods.StepContext` built here once per step (settings, group size, process,
step, tokenizer, ``generate``, ``log``, this process's rows) - never the trainer itself.

This module, with :mod:`medrl.train.kl_clamp`, :mod:`medrl.train.dynamic_sampling` and
:mod:`medrl.train.speed`, is the adapter to TRL: the only code that touches ``GRPOTrainer``'s
private attributes (:data:`TRL_PRIVATES`), checked against the TRL versions
:data:`TRL_CHECKED` (a test fails on a TRL outside them). What the trainer itself does at the
hook points, for every method:

- ``before_rewards``: the one correctness decision per rollout (and per corrupted rollout),
  :func:`medrl.rewards.correctness.correctness_column` with ``algorithm.correctness`` and the run's
  judge, when a reward of the run names the ``correct`` (``corrupted_correct``) column among its
  parameters; it reaches the rewards as those columns.
- ``after_rewards``: each reward's typed result (:class:`medrl.types.RewardResult`, kept in
  ``batch.results``; a plain list from TRL's reward signature is a result with no extras) and
  unscorable rows. A reward returning ``None`` means "not applicable" (TRL sums the others); a
  reward that *cannot score* a rollout lists it in its result's ``unscorable``. With
  ``algorithm.unscorable = "exclude"`` (default) such a row becomes all-NaN (no baseline, advantage
  0) and its completion mask is zeroed (no loss, no KL); ``"per_reward"`` treats it like ``None``.
  A result's step outputs (a process reward's ``steps`` / ``step_verdicts``) are copied into the
  batch here.
- ``advantage_inputs``: the estimator named by ``algorithm.advantage`` (:mod:`medrl.advantages`,
  one signature for all) - TRL's own values for those TRL computes (``grpo``, ``gdpo``), else
  the estimator called with the inputs the methods add and the providing method's config.
- reward outputs are checked (:mod:`medrl.train.reward_checks`): a reward that raises or
  returns anything but one number (or None / UNSCORABLE) per rollout stops the run naming it; a
  non-finite value makes its rollout unscorable.
- checkpoints: each is saved as one commit (:func:`medrl.train.checkpoints.committed_checkpoint`:
  marked unfinished until the run ledger is written; old ones rotated away after). Each method's
  ``state_dict`` goes to ``method_state.json`` and back through ``load_state_dict`` on resume
  (adaptive reward thresholds travel this way; the method that owns them freezes them during
  evaluation). Stateful rewards (:class:`medrl.types.StatefulReward`) no method carries
  (``Method.state_rewards``), e.g. a custom reward, are saved in ``reward_state.json``.
- per-step logs beyond TRL's (``{answer,process}_reward``, ``ffp/*``, ``judge/*``,
  ``unscorable_frac``, ``correctness/correct_frac``), the hacking monitor, credit evidence.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
from typing import Any, Sequence

import torch
from trl import GRPOTrainer

from medrl.methods import Generated, MedBatch, Method, StepContext, compose
from medrl.train.clock import MonotonicClock
from medrl.train import callbacks
from medrl.train.credit import CreditWriter
from medrl.train.recipes import resolve_algorithm

log = logging.getLogger(__name__)

METHOD_STATE_FILE = "method_state.json"

#: the TRL versions this adapter was checked against (a PEP 440 specifier;
#: ``tests/train/test_trl_adapter.py`` fails on a TRL outside it: check :data:`TRL_PRIVATES` again)
TRL_CHECKED = ">=1.16,<1.17"
#: the private attributes of TRL's ``GRPOTrainer`` the adapter uses (this module,
#: ``kl_clamp.py``, ``dynamic_sampling.py``, ``speed.py``); no other file of medrl's methods uses one
TRL_PRIVATES = ("_generate_and_score_completions", "_calculate_rewards", "_compute_loss", "_metrics", "_tokenizer",
                "_tokenize_prompts", "_generate_single_turn", "_get_per_token_logps_and_entropies",
                "_save_checkpoint", "_load_from_checkpoint", "_load_optimizer_and_scheduler",
                "_init_training_state", "_run_epoch")


@contextlib.contextmanager
def _zero3_init_off():
    """Turn transformers' DeepSpeed ZeRO-3 hook off for the duration (no-op without ZeRO-3).

    Under ZeRO-3, ``from_pretrained`` builds every model inside ``deepspeed.zero.Init``, i.e.
    partitioned across processes. A reward-side model that a reward loads on its first call
    (BERTScore, sentence embeddings) is never wrapped by a DeepSpeed engine, so its partitioned
    weights fail in its first forward (``RuntimeError: 'weight' must be 2-D``). Such models are
    small and frozen: load them whole on every process.
    """
    from transformers.integrations import deepspeed as hf_ds

    ref = getattr(hf_ds, "_hf_deepspeed_config_weak_ref", None)
    config = ref() if ref is not None else None
    if config is None or not hf_ds.is_deepspeed_zero3_enabled():
        yield
        return
    hf_ds.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        hf_ds.set_hf_deepspeed_config(config)


def _same(a: Any, b: Any) -> bool:
    """Whether two settings of one option agree (a band given as a list or a tuple is the same)."""
    norm = (lambda v: tuple(float(x) for x in v) if isinstance(v, (list, tuple)) else v)
    return norm(a) == norm(b)


def _names_advantage(algorithm: Any) -> bool:
    """Whether the ``algorithm`` section given to the trainer names its estimator itself."""
    if isinstance(algorithm, dict):
        return "advantage" in algorithm
    return "advantage" in (getattr(algorithm, "model_fields_set", None) or ())


def _estimator_of(args: Any, default: str) -> str:
    """The estimator TRL computes under ``args``: the registered one whose ``trl_options`` the
    GRPOConfig holds (``multi_objective_aggregation``: ``sum_then_normalize`` is GRPO's,
    ``normalize_then_sum`` GDPO's), else ``default``."""
    from medrl.advantages import ADVANTAGES, get_advantage_fn

    for name in ADVANTAGES.names():
        opts = getattr(get_advantage_fn(name), "trl_options", None)
        if opts and all(getattr(args, k, None) == v for k, v in opts.items()):
            return name
    return default


# --------------------------------------------------------------------------------------------


class MedGRPOTrainer(MonotonicClock, GRPOTrainer):
    """``GRPOTrainer`` whose steps call the hooks of the run's methods (:mod:`medrl.methods`).

    Extra keyword arguments (everything else goes to ``GRPOTrainer``):
        algorithm: the recipe's ``algorithm`` section (defaults from the typed configs). When it
            names no estimator, the ``GRPOConfig`` chooses as it does for ``GRPOTrainer``:
            ``multi_objective_aggregation="normalize_then_sum"`` runs GDPO's.
        methods: method names (the recipe's ``methods``) or :class:`~medrl.methods.Method`
            objects; default: the methods ``algorithm`` switches on
            (:func:`medrl.methods.active_method_names`).
        judge: the judge behind the judged rewards and the correctness decision.
        monitor: reward-hacking monitor settings (:class:`medrl.train.monitor.MonitorConfig`, a
            dict, or False); default: the ``algorithm.monitor`` section.
        probe_records: held-out records the monitor's probe answers (``monitor.probe_every``);
            default: the first rows of ``eval_dataset``.
    """

    def __init__(self, *args, algorithm: dict | None = None, methods: Sequence[str | Method] | None = None,
                 judge: Any = None, monitor: Any = None, probe_records: Sequence | None = None, **kwargs):
        from medrl.methods import active_method_names

        names = [m for m in (methods or ()) if isinstance(m, str)]
        objects = [m for m in (methods or ()) if not isinstance(m, str)]
        self.judge = judge
        super().__init__(*args, **kwargs)
        reward_names = list(self.reward_func_names)
        self.medrl_algorithm = alg = resolve_algorithm(algorithm, names, reward_names)
        if alg["advantage"] == "grpo" and not _names_advantage(algorithm):
            # no estimator named: follow the GRPOConfig as GRPOTrainer does (normalize_then_sum is GDPO)
            alg["advantage"] = _estimator_of(self.args, default="grpo")
        # the recipe's list, else what `algorithm` and the rewards switch on; then Method objects
        self.methods: list[Method] = compose(
            [*(names or active_method_names(alg, reward_names=reward_names)), *objects], alg)
        self._stateful = callbacks.stateful_rewards(self.reward_funcs)
        self._process_fn = self._process_reward(reward_names)
        self._check_advantage()
        logged = alg.get("log_rewards") or {}
        self._log_idx = {k: reward_names.index(v) for k, v in logged.items() if v in reward_names}
        self._judge_seen = self._judge_counts()
        from medrl.rewards.correctness import uses_correctness

        if alg.get("correctness") == "judge" and judge is None and any(uses_correctness(f) for f in self.reward_funcs):
            raise ValueError("algorithm.correctness = 'judge' needs a judge (MedGRPOTrainer(judge=...))")
        setup = self._step_context("train", 0)
        for m in self.methods:  # hook 1: setup (checks; refuses what cannot work)
            m.setup(setup)
        # stateful rewards no method checkpoints itself: the trainer's reward_state.json
        owned = {id(fn) for m in self.methods for fn in m.state_rewards()}
        self._reward_state = {k: fn for k, fn in self._stateful.items() if id(fn) not in owned}
        self._batch: MedBatch | None = None
        self._ctx: StepContext | None = None
        self._last_rewards = None
        self._last_unscorable: torch.Tensor | None = None  # (N_total,) bool, gathered
        self._last_texts: list[str] = []
        self._last_ids: list[list[int]] = []
        # a few rollouts with their token advantages -> <output_dir>/credit.jsonl
        self._credit = CreditWriter(self.args.output_dir, alg["log_credit_every"], alg["log_credit_rollouts"])
        from medrl.judges.cost import attach_judge_cost
        from medrl.train.dynamic_sampling import attach_dynamic_sampling
        from medrl.train.monitor import attach_monitor

        # reward-hacking monitor; on by default
        self._monitor = attach_monitor(self, monitor, probe_records=probe_records)
        self._judge_cost = attach_judge_cost(self, judge)  # judge tokens, cost, budget (medrl.judges.cost)
        dynamic = self._apply_trainer_options(probe_records)  # what the methods turn on (clamped KL, ...)
        self._dynamic = attach_dynamic_sampling(self, dynamic)  # DAPO dynamic sampling; None = off
        from medrl.train.speed import speed_up_step

        self._speedups = speed_up_step(self)  # each distinct image processed and encoded once per pass

    # ---------------------------------------------------------------- hook points

    def _hook(self, name: str, ctx: StepContext, batch: MedBatch) -> None:
        for m in self.methods:
            getattr(m, name)(ctx, batch)

    def _step_context(self, mode: str, rows: int) -> StepContext:
        """What the hooks of one step see (:class:`medrl.methods.StepContext`): built once per
        step (and once for ``setup``), from TRL's attributes here."""
        index = self.accelerator.process_index
        return StepContext(
            algorithm=self.medrl_algorithm, args=self.args, reward_names=tuple(self.reward_func_names),
            reward_weights=self.reward_weights, rewards=dict(zip(self.reward_func_names, self.reward_funcs)),
            tokenizer=self._tokenizer,
            num_generations=self.num_generations if mode == "train" else self.num_generations_eval,
            process_index=index, num_processes=self.accelerator.num_processes,
            global_step=int(self.state.global_step), mode=mode, rows=range(index * rows, (index + 1) * rows),
            uses_tools=bool(self.tools), _generate=self._generate_for_hooks,
            _log=functools.partial(self._log_for_hooks, mode))

    def _generate_for_hooks(self, prompts: list, images: list | None, n: int) -> Generated:
        """:meth:`StepContext.generate`: ``prompts`` (with ``images`` put into their messages)
        through TRL's own generation backend (HF generate or vLLM), no gradient."""
        if images is not None:
            from trl.data_utils import prepare_multimodal_messages

            prompts = [prepare_multimodal_messages(p, images=list(im)) for p, im in zip(prompts, images)]
        prompt_ids, imgs, mm_fields = self._tokenize_prompts(prompts)
        ids, _ = self._generate_single_turn(prompt_ids, imgs, mm_fields, n)
        return Generated(list(self.processing_class.batch_decode(ids, skip_special_tokens=True)),
                         [list(i) for i in ids])

    def _log_for_hooks(self, mode: str, name: str, value: float) -> None:
        """:meth:`StepContext.log`: a per-step metric beside TRL's own."""
        self._metrics[mode][name].append(value)

    def _process_reward(self, reward_names: list[str]):
        """The reward a method names as the one whose step outputs fill ``batch.steps`` /
        ``batch.step_verdicts`` (:attr:`Method.process_reward`), or None: then the first reward
        whose result has step outputs gives them, step by step."""
        wanted = [m.process_reward for m in self.methods if m.process_reward in reward_names]
        return self.reward_funcs[reward_names.index(wanted[0])] if wanted else None

    def _check_advantage(self) -> None:
        """Refuse, at start, an estimator the run cannot feed: one whose inputs come from a method
        that is not on, or one TRL computes under a TRL setting the run does not have."""
        from medrl.advantages import get_advantage_fn
        from medrl.methods.base import advantage_problem

        name = self.medrl_algorithm["advantage"]
        why = advantage_problem(name, self.methods)
        for key, value in (getattr(get_advantage_fn(name), "trl_options", None) or {}).items():
            if getattr(self.args, key, value) != value:
                why = why or f"it is TRL's {key}={value!r}, and the GRPOConfig has {getattr(self.args, key)!r}"
        if why:
            raise ValueError(f"algorithm.advantage = {name!r}: {why}")

    def _apply_trainer_options(self, probe_records: Sequence | None) -> Any:
        """Turn on what the run's methods ask of the generic machinery
        (:class:`medrl.methods.base.TrainerOptions`), each merged with the run's own setting of it
        (a different value is refused: one place per setting): the clamped KL bound
        (``medrl_kl_clamp``), best-checkpoint selection (``best_checkpoint``, a callback); returns
        the dynamic-sampling setting (``algorithm.dynamic_sampling`` with a method's band)."""
        from medrl.methods.base import TRAINER_OPTION_KEYS, run_trainer_options
        from medrl.train.kl_clamp import check_kl_clamp

        opts = run_trainer_options(self.methods)
        dynamic = self.medrl_algorithm.get("dynamic_sampling")
        own = {"kl_clamp": getattr(self.args, "kl_clamp", None),
               "mean_band": dynamic.get("mean_band") if isinstance(dynamic, dict) else None,
               "best_checkpoint": getattr(self.args, "metric_for_best_model", None)}
        for name, value in own.items():
            asked = getattr(opts, name)
            if asked is not None and value is not None and not _same(value, asked):
                raise ValueError(f"{TRAINER_OPTION_KEYS[name]} is {value!r}, but a method of the run turns it on with "
                                 f"{asked!r} (its config): set it in one place")
        self.medrl_kl_clamp = opts.kl_clamp if opts.kl_clamp is not None else own["kl_clamp"]
        check_kl_clamp(self.medrl_kl_clamp, self.args)
        self.best_checkpoint = None
        if opts.best_checkpoint is not None:
            from medrl.train.best_checkpoint import attach_best_checkpoint

            self.best_checkpoint = attach_best_checkpoint(self, metric=opts.best_checkpoint,
                                                          probe_records=probe_records)
        if opts.mean_band is not None:
            dynamic = {**(dynamic if isinstance(dynamic, dict) else {}), "mean_band": list(opts.mean_band)}
        return dynamic

    def _advantages(self, ctx: StepContext, batch: MedBatch):
        """Hook 5: the advantages the loss receives (:func:`medrl.methods.base.estimate_advantages`)."""
        from medrl.methods.base import estimate_advantages

        return estimate_advantages(ctx, batch, self.medrl_algorithm["advantage"], self.methods)

    # ---------------------------------------------------------------- one step

    def _generate_and_score_completions(self, inputs):
        mode = "train" if self.model.training else "eval"
        if mode == "train" and self._dynamic is not None and not self._dynamic.active:
            return self._dynamic.run(self, inputs)  # DAPO dynamic sampling: calls this method once per round
        batch = MedBatch(inputs=inputs, mode=mode)
        ctx = self._ctx = self._step_context(mode, len(inputs))  # what the hooks see of this step
        self._hook("before_generation", ctx, batch)  # hook 2 (e.g. extra rollouts on corrupted images)
        columns = batch.reward_columns()
        if columns:  # new row dicts: the caller's inputs stay as they were
            inputs = [{**x, **{k: v[i] for k, v in columns.items()}} for i, x in enumerate(inputs)]
            batch.inputs = inputs
        self._batch = batch
        out = super()._generate_and_score_completions(inputs)  # -> _calculate_rewards: hooks 3-4

        n = len(inputs)
        start = self.accelerator.process_index * n
        batch.local_rewards = self._last_rewards[start : start + n]
        batch.out = out
        if self.medrl_algorithm["unscorable"] == "exclude":
            keep = (~self._last_unscorable[start : start + n]).to(out["completion_mask"].device)
            keep = keep.to(out["completion_mask"].dtype).unsqueeze(1)
            out["completion_mask"] = out["completion_mask"] * keep
            loss_mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
            out["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        batch.seq_advantages = out["advantages"]  # (B,) A_i, before any token shaping
        out["advantages"] = self._advantages(ctx, batch)  # hook 5
        step_valid = batch.step_valid
        self._log_medrl_metrics(mode, step_valid)
        self._hook("log", ctx, batch)  # hook 6
        if mode == "train":
            self._monitor.observe(self, inputs, batch.local_rewards)  # hacking signals (medrl.train.monitor)
        # keep last: logs out["advantages"] exactly as _compute_loss will receive them
        if mode == "train" and self._credit.due(self.state.global_step) and self.accelerator.is_main_process:
            self._credit.log(self, inputs, out, batch.seq_advantages, batch.local_rewards, step_valid, batch.steps)
        return out

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        from medrl.answers.completion import completion_text
        from medrl.train.guards import check_reasoning_kept, uses_parsed_content

        batch, ctx = self._batch, self._ctx
        if batch is None or batch.inputs is not inputs:  # called on its own (tests, subclasses)
            batch = self._batch = MedBatch(inputs=inputs, mode="train" if self.model.training else "eval")
            ctx = self._ctx = self._step_context(batch.mode, len(inputs))
        if uses_parsed_content(self._tokenizer):  # TRL's parse_response path may drop <think>
            check_reasoning_kept(completions, completion_ids_list, self._tokenizer)
        batch.texts = [completion_text(c) for c in completions]
        batch.completion_ids = [list(ids) for ids in completion_ids_list]
        self._shared_correctness(batch)  # the one correctness decision (trainer's before_rewards step)
        self._hook("before_rewards", ctx, batch)  # hook 3
        columns = batch.reward_columns()
        for i, x in enumerate(inputs):  # the rewards read batch fields as TRL columns
            for k, v in columns.items():
                x[k] = v[i]
        from medrl.train.reward_checks import checked_rewards

        # reward encoders loaded lazily here are whole models, not ZeRO-3 shards; every reward's
        # output is checked (a broken one stops the run naming it; non-finite rows are unscorable)
        with _zero3_init_off(), checked_rewards(self, len(prompts)) as checks:
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        nonfinite = self.accelerator.gather(checks.mask(len(prompts), rewards.device, nonfinite_only=True))
        self._metrics[batch.mode]["nonfinite_frac"].append(nonfinite.float().mean().item())
        # each reward's typed result (values, unscorable rows, step outputs), in reward order
        batch.results = {name: checks.results[name] for name in self.reward_func_names if name in checks.results}
        local = checks.mask(len(prompts), rewards.device)  # rows a result lists, or a check found non-finite
        unscorable = self.accelerator.gather(local).bool()
        if self.medrl_algorithm["unscorable"] == "exclude" and unscorable.any():
            rewards = rewards.clone()
            rewards[unscorable] = torch.nan  # all-NaN row: TRL leaves it out and gives advantage 0
        self._metrics[batch.mode]["unscorable_frac"].append(unscorable.float().mean().item())
        batch.rewards, batch.unscorable = rewards, unscorable  # gathered: (N_total, R), (N_total,)
        self._collect_reward_outputs(batch, len(prompts))
        self._hook("after_rewards", ctx, batch)  # hook 4
        self._last_unscorable = unscorable
        self._last_rewards = rewards
        self._last_texts, self._last_ids = batch.texts, batch.completion_ids
        return rewards

    def _collect_reward_outputs(self, batch: MedBatch, n: int) -> None:
        """Copy the step outputs of the rewards' results (``RewardResult.outputs``) into the batch
        fields of the same names: ``steps`` / ``step_verdicts`` from the process reward a method
        names, else from the first result that has outputs; any other output from its one reward."""
        named = next((name for fn, name in zip(self.reward_funcs, self.reward_func_names) if fn is self._process_fn),
                     None)
        process = named or next((name for name, r in batch.results.items() if r.outputs), None)
        owners: dict[str, str] = {}
        for name, result in batch.results.items():
            fields = result.outputs
            if not fields or (name != process and "step_verdicts" in fields):
                continue
            for key, v in fields.items():
                if key in owners:
                    raise ValueError(f"rewards {owners[key]!r} and {name!r} both give the batch field {key!r}")
                if v is None or len(v) != n:
                    raise RuntimeError(f"reward {name!r} did not give {key!r} for this batch "
                                       f"({None if v is None else len(v)} entries, expected {n})")
                if key not in MedBatch.__dataclass_fields__:
                    raise ValueError(f"reward {name!r}: {key!r} is not a MedBatch field")
                setattr(batch, key, list(v))
                owners[key] = name

    def _shared_correctness(self, batch: MedBatch) -> None:
        """Decide every rollout's correctness once (and every corrupted rollout's) for all rewards
        that read it: ``batch.correct`` / ``batch.corrupted_correct``
        (:func:`medrl.rewards.correctness.correctness_column`, mode ``algorithm.correctness``)."""
        from medrl.answers.completion import parse_response
        from medrl.rewards.correctness import correctness_column, uses_correctness, uses_corrupted_correctness

        inputs = batch.inputs
        if not inputs or not any(uses_correctness(f) for f in self.reward_funcs):
            return
        texts = {"correct": batch.texts}
        if batch.corrupted_completions is not None and any(uses_corrupted_correctness(f) for f in self.reward_funcs):
            texts["corrupted_correct"] = batch.corrupted_completions
        key = "images" if "images" in inputs[0] else "image"
        k = len(texts)
        ok = correctness_column(
            [parse_response(t) for col in texts.values() for t in col],  # a completion with no one answer: None
            [x.get("answer") for x in inputs] * k, questions=[x.get("question") for x in inputs] * k,
            answer_types=[x.get("answer_type") for x in inputs] * k,
            open_ended=[x.get("open_ended") for x in inputs] * k, images=[x.get(key) for x in inputs] * k,
            mode=self.medrl_algorithm.get("correctness", "auto"), judge=self.judge,
        )
        n = len(inputs)
        for j, name in enumerate(texts):
            setattr(batch, name, list(ok[j * n:(j + 1) * n]))
        decided = [v for v in ok[:n] if v is not None]
        if decided:
            self._metrics[batch.mode]["correctness/correct_frac"].append(sum(decided) / len(decided))

    # ---------------------------------------------------------------- loss

    def _compute_loss(self, model, inputs):
        """TRL's loss; with ``grpo.kl_clamp`` its KL term is MediX-R1's clamped k3 instead
        (:func:`medrl.train.kl_clamp.compute_loss_with_clamped_kl`)."""
        from medrl.train.kl_clamp import compute_loss_with_clamped_kl

        return compute_loss_with_clamped_kl(self, model, inputs, super()._compute_loss)

    # ---------------------------------------------------------------- logging

    def _judge_counts(self) -> dict[str, int]:
        stats = getattr(self.judge, "stats", None)
        if stats is None:
            return {}
        d = stats.as_dict() if hasattr(stats, "as_dict") else dict(vars(stats))
        return {k: int(d.get(k, 0)) for k in ("calls", "cache_hits", "failures")}

    def _log_medrl_metrics(self, mode: str, step_valid) -> None:
        from medrl.eval.analysis import first_failure_point, stage_of

        rewards = self._last_rewards
        for label, idx in self._log_idx.items():
            col = rewards[:, idx]
            if (~torch.isnan(col)).any():
                self._metrics[mode][f"{label}_reward"].append(torch.nanmean(col).item())
        if step_valid is not None:
            counts = torch.zeros(5, device=self.accelerator.device)  # early, mid, late, no_ffp, judged
            for v in step_valid:
                if not v:
                    continue  # unscored or no steps: not part of the FFP shares
                stage = stage_of(first_failure_point(v))
                counts[("early", "mid", "late", "no_ffp").index(stage)] += 1
                counts[4] += 1
            counts = self.accelerator.reduce(counts, reduction="sum")
            if counts[4] > 0:
                for j, stage in enumerate(("early", "mid", "late", "no_ffp")):
                    self._metrics[mode][f"ffp/{stage}"].append((counts[j] / counts[4]).item())
        if self.judge is not None and self._judge_seen:
            now = self._judge_counts()
            delta = torch.tensor([now[k] - self._judge_seen[k] for k in now], dtype=torch.float32,
                                 device=self.accelerator.device)
            self._judge_seen = now
            delta = self.accelerator.reduce(delta, reduction="sum")
            for k, v in zip(now, delta.tolist()):
                self._metrics[mode][f"judge/{k}"].append(v)

    # ---------------------------------------------------------------- checkpoints (state_dict hooks)

    def _save_checkpoint(self, model, trial):
        from medrl.train.checkpoints import committed_checkpoint, write_json_atomic

        # one commit: marked as unfinished, written, the run ledger last, then old ones rotated away
        with committed_checkpoint(self, trial) as folder:
            super()._save_checkpoint(model, trial)
            if folder is None:
                return
            if self._reward_state:
                callbacks.save_reward_state(folder, self._reward_state.values())
            states = {m.label(): m.state_dict() for m in self.methods}  # keyed as the logs name them
            states = {k: v for k, v in states.items() if v}
            if states:
                write_json_atomic(folder / METHOD_STATE_FILE, states)

    def _init_training_state(self, max_steps, num_update_steps_per_epoch, num_train_epochs, resume_from_checkpoint,
                             trial):
        """Resuming from a checkpoint that already reached ``max_steps`` trains no further step.

        transformers' ``Trainer`` (5.x) skips the checkpoint's batches of the current epoch and
        then runs the rest of that epoch's loop, checking ``max_steps`` only after a step: a run
        resumed at ``max_steps`` partway through an epoch ran one step more (and wrote
        ``checkpoint-<max_steps + 1>``). Starting past the last epoch leaves nothing to run; the
        checkpoint's weights and state are still loaded and the run finishes as usual."""
        epochs, steps = super()._init_training_state(max_steps, num_update_steps_per_epoch, num_train_epochs,
                                                     resume_from_checkpoint, trial)
        if resume_from_checkpoint is not None and 0 < max_steps <= self.state.global_step:
            log.info("checkpoint %s is at step %d of %d: nothing left to train", resume_from_checkpoint,
                     self.state.global_step, max_steps)
            return num_train_epochs, 0
        return epochs, steps

    def _run_epoch(self, *args, **kwargs):
        """An epoch that a callback stopped before it began trains no step.

        transformers checks ``control.should_training_stop`` only after a step, so a stop asked
        at the start (a run resumed with its judge budget already spent:
        :meth:`medrl.judges.cost.JudgeCostCallback.on_epoch_begin`) would still train one step
        and spend more of the budget."""
        if self.control.should_training_stop:
            return None
        return super()._run_epoch(*args, **kwargs)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        callbacks.reload_renamed_weights(self, resume_from_checkpoint, model if model is not None else self.model)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        if self._reward_state:
            restored = callbacks.load_reward_state(checkpoint, self._reward_state.values())
            if restored:
                log.info("restored reward state %s from %s", restored, checkpoint)
        restored = self._load_method_state(checkpoint)
        if restored:
            log.info("restored method state %s from %s", restored, checkpoint)

    def _load_method_state(self, checkpoint: str) -> list[str]:
        """Hand each method its state from ``checkpoint/method_state.json`` (keyed by
        :meth:`Method.label`); returns their labels.

        A checkpoint written before methods carried their rewards' state has those rewards in
        ``reward_state.json`` only: they are read from there (never written there again)."""
        path = os.path.join(checkpoint, METHOD_STATE_FILE)
        states = {}
        if os.path.isfile(path):
            with open(path) as fh:
                states = json.load(fh)
        restored = []
        for m in self.methods:
            if m.label() in states:
                m.load_state_dict(states[m.label()])
                restored.append(m.label())
            elif m.state_rewards() and callbacks.load_reward_state(checkpoint, m.state_rewards()):
                restored.append(m.label())
        return restored
