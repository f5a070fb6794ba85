"""``MedGRPOTrainer``: TRL's ``GRPOTrainer`` plus what the medical papers add.

TRL does the rollouts, rewards (``_calculate_rewards``), group advantages, loss variants (GRPO,
DAPO, Dr. GRPO, GSPO, GDPO's normalize-then-sum), KL, vLLM and scale-out. This subclass adds:

1. **MRPO token advantages** (MRPO Sec. 4.2, Eq. 7, App. D.2-D.3). After TRL has
   scored a batch, the process reward's step verdicts (``fn.last_step_verdicts``, from the one
   judge call per rollout - no second call) and step character spans (``fn.last_steps``) are
   mapped onto completion tokens and :func:`medrl.advantages.mrpo_token_advantages` turns the
   (B,) advantages into a (B, T) tensor. TRL's ``_compute_loss`` accepts (B, T) advantages as
   they are (it only unsqueezes a 1-D tensor). Options defined through one advantage or one
   ratio per rollout (sequence-level importance sampling, LUSPO, VESPO, the off-policy
   sequence mask) are refused at start with the reason (:func:`token_advantage_conflicts`).
2. **Unscorable rollouts are excluded; ``None`` stays "not applicable".** A reward returning
   ``None`` for a sample means, as in TRL, that it does not apply: TRL turns it into NaN and
   sums the other rewards (``nansum``); the rollout trains. A reward that *cannot score* a
   rollout (judge outage, malformed verdict, missing reference) returns
   :data:`medrl.types.UNSCORABLE`; the reward object hands TRL ``None`` and lists the rows in
   ``fn.last_unscorable`` (:func:`medrl.types.record_unscorable`). With
   ``unscorable="exclude"`` (the default) such a row becomes all-NaN - it leaves the group
   baseline and gets advantage 0 (TRL's rule for all-NaN rows) - and its completion mask is
   zeroed, so it adds neither policy loss nor KL. ``"per_reward"`` treats it like ``None``.
3. **CAPO corrupted-image rollouts** (CAPO Sec. 3, Eq. 3). Before TRL generates,
   every prompt's image is corrupted (``medrl.data.corruption.corrupt_image``) and rolled out
   through TRL's own generation backend (HF generate or vLLM) without gradient. Pairing: the
   i-th rollout o_i of a prompt is paired with the i-th corrupted rollout o~_i of the same
   prompt (both groups have G members in the same order; every row of a group sees the same
   corrupted image, seeded by record id, ``capo.seed`` and the step). The texts reach the
   ``capo_perception`` reward as the ``corrupted_completions`` column; they are never part of
   the training batch.
4. **Stateful rewards** (ARMed's adaptive thresholds; opt-in ``checkpoint_state = True``,
   :class:`medrl.types.StatefulReward` - reward models are not reward state) are frozen during evaluation, saved into
   every checkpoint (``reward_state.json``) and restored on resume - next to TRL's own
   adaptive-entropy state, through the same two hooks.
5. **Logging** per step, on top of TRL's ``rewards/<name>/mean|std``, ``kl``,
   ``completions/mean_length``: ``answer_reward`` and ``process_reward`` (MRPO App. G curves),
   ``ffp/early|mid|late|no_ffp`` (share of judged rollouts whose first failure falls in each
   stage, MRPO Sec. 5.3), ``judge/calls|cache_hits|failures`` (per step), and MRPO's
   ``mrpo/reshaped_frac``, ``correctness/correct_frac``.
6. **One correctness decision per rollout**. Before TRL calls the rewards, every
   rollout's answer (and every CAPO corrupted rollout's) is decided once by
   :func:`medrl.rewards.correctness.correctness_column` with ``algorithm.correctness`` and the
   run's judge; the verdicts reach CAPO R_DAR/R_PCR, StepRAR and MediX-R1 R_llm as the
   ``correct`` / ``corrupted_correct`` columns, so no rollout is judged twice.
7. **Credit evidence**: every ``algorithm.log_credit_every`` steps the main process
   appends a few rollouts with the token advantages exactly as ``_compute_loss`` receives them
   to ``<output_dir>/credit.jsonl`` (:mod:`medrl.train.credit`; ``medrl analyze credit``).

Token alignment (MRPO). A step's span is in characters of the decoded completion text (the text
TRL gave the reward functions). Token offsets come from re-tokenising that text with
``return_offsets_mapping``: when this reproduces the generated ids (trailing special tokens
such as EOS, which decoding drops, get an empty offset at the end of the text), the offsets are
exact; otherwise (a non-canonical tokenisation was sampled, or special tokens sit mid-text) the
offsets are rebuilt by decoding growing prefixes of the generated ids, exact up to how the
tokenizer decodes partial multi-byte characters. Tokens outside every step (tags, the answer,
EOS, padding) keep the sequence advantage A_i.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import numbers
from typing import Any, Sequence

import torch
from trl import GRPOTrainer

from medrl.parsing import completion_token_offsets, prefix_decode_offsets  # noqa: F401 (re-exported)
from medrl.train import callbacks
from medrl.train.credit import CreditWriter

from medrl.train.recipes import ALGORITHM_DEFAULTS, CAPO_DEFAULTS, deep_merge

log = logging.getLogger(__name__)

CORRUPTED_COLUMN = "corrupted_completions"  # read by medrl.rewards.capo (capo_perception)


def _stable_seed(*parts: Any) -> int:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:4], "little")


def resolve_algorithm(algorithm: dict | None) -> dict:
    """The ``algorithm`` section with defaults filled in (same rules as recipe loading)."""
    alg = deep_merge(ALGORITHM_DEFAULTS, algorithm or {})
    if alg.get("capo"):
        alg["capo"] = deep_merge(CAPO_DEFAULTS, alg["capo"] if isinstance(alg["capo"], dict) else {})
    return alg


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


def token_advantage_conflicts(args: Any) -> list[str]:
    """Why TRL options in ``args`` (a ``GRPOConfig``) cannot take MRPO's (B, T) token advantages.

    TRL's ``_compute_loss`` accepts (B, T) advantages with every option, but some options are
    defined through one advantage (or one ratio) per rollout, and with token advantages they
    would silently compute something else. Empty when everything combines.
    """
    why = []
    if getattr(args, "importance_sampling_level", "token") == "sequence":
        why.append("importance_sampling_level='sequence' (GSPO): one ratio s_i is shared by every token of "
                   "rollout i, so the gradient of sum_t A_it * s_i is (sum_t A_it) * grad s_i - the step "
                   "token advantages (MRPO Eq. 7) collapse to their mean and the step credit is lost; "
                   "use importance_sampling_level='token'")
    loss = getattr(args, "loss_type", None)
    if loss == "luspo":
        why.append("loss_type='luspo' is GSPO's length-scaled sequence-level loss (it needs "
                   "importance_sampling_level='sequence', see above)")
    if loss == "vespo":
        why.append("loss_type='vespo' picks its gamma weight of the sequence ratio by the sign of the "
                   "rollout's advantage; MRPO gives one rollout tokens of both signs (valid +|A_i|, "
                   "invalid -f(p)|A_i|)")
    if getattr(args, "off_policy_mask_threshold", None) is not None:
        why.append("off_policy_mask_threshold drops whole rollouts by the sign of their advantage; MRPO "
                   "gives one rollout tokens of both signs")
    return why


def refuse_with_token_advantages(args: Any) -> None:
    """Raise ValueError naming every option of ``args`` that cannot take MRPO token advantages
    (:func:`token_advantage_conflicts`); ``None`` (TRL's defaults) passes."""
    why = token_advantage_conflicts(args) if args is not None else []
    if why:
        raise ValueError("algorithm.advantage = 'mrpo' (token advantages) cannot be combined with: "
                         + "; ".join(why))


# --------------------------------------------------------------------------------------------


class MedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with MRPO token advantages, CAPO corrupted rollouts, unscorable-row
    exclusion, checkpointed reward state and the papers' training curves.

    Extra keyword arguments (everything else goes to ``GRPOTrainer``):
        algorithm: the recipe's ``algorithm`` section (see :mod:`medrl.train.recipes`).
        judge: the judge behind the judged rewards; only used to log its call statistics.
        monitor: reward-hacking monitor settings (:class:`medrl.train.monitor.MonitorConfig`, a
            dict, or False); default: the ``algorithm.monitor`` section.
    """

    def __init__(self, *args, algorithm: dict | None = None, judge: Any = None, monitor: Any = None, **kwargs):
        self.medrl_algorithm = resolve_algorithm(algorithm)
        self.judge = judge
        if self.medrl_algorithm["advantage"] == "mrpo":
            refuse_with_token_advantages(kwargs.get("args", args[2] if len(args) > 2 else None))
        super().__init__(*args, **kwargs)
        alg = self.medrl_algorithm
        names = list(self.reward_func_names)
        self._stateful = callbacks.stateful_rewards(self.reward_funcs)
        self._answer_idx = self._process_fn = None
        if alg["advantage"] == "mrpo":
            mrpo = alg["mrpo"]
            for key in ("answer_reward", "process_reward"):
                if mrpo[key] not in names:
                    raise ValueError(f"MRPO needs the reward {mrpo[key]!r} ({key}); the trainer has {names}")
            if self.tools:
                raise ValueError("MRPO token advantages are not supported together with tool calling")
            self._answer_idx = names.index(mrpo["answer_reward"])
        process_name = alg["mrpo"]["process_reward"]
        if process_name in names:
            self._process_fn = self.reward_funcs[names.index(process_name)]
        logged = alg.get("log_rewards") or {}
        self._log_idx = {k: names.index(v) for k, v in logged.items() if v in names}
        self._judge_seen = self._judge_counts()
        if alg.get("correctness") == "judge" and judge is None and any(getattr(f, "uses_correctness", False)
                                                                       for f in self.reward_funcs):
            raise ValueError("algorithm.correctness = 'judge' needs a judge (MedGRPOTrainer(judge=...))")
        self._last_rewards = None
        self._last_unscorable: torch.Tensor | None = None  # (N_total,) bool, gathered
        self._last_texts: list[str] = []
        self._last_ids: list[list[int]] = []
        # a few rollouts with their token advantages -> <output_dir>/credit.jsonl
        self._credit = CreditWriter(self.args.output_dir, alg["log_credit_every"], alg["log_credit_rollouts"])
        # reward-hacking monitor (medrl.train.monitor): `monitor=` or algorithm.monitor; on by default
        from medrl.judges.cost import attach_judge_cost
        from medrl.train.monitor import attach_monitor

        self._monitor = attach_monitor(self, monitor)
        self._judge_cost = attach_judge_cost(self, judge)  # judge tokens, cost, budget (medrl.judges.cost)
        from medrl.train.dynamic_sampling import attach_dynamic_sampling

        self._dynamic = attach_dynamic_sampling(self)  # DAPO dynamic sampling; None = off (algorithm.dynamic_sampling)

    # ---------------------------------------------------------------- rewards

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        from medrl.parsing import completion_text
        from medrl.train.guards import check_reasoning_kept, uses_parsed_content

        if uses_parsed_content(self._tokenizer):  # TRL's parse_response path may drop <think>
            check_reasoning_kept(completions, completion_ids_list, self._tokenizer)
        self._shared_correctness(inputs, completions)
        for fn in self.reward_funcs:  # never read a previous batch's rows
            if getattr(fn, "last_unscorable", None) is not None:
                fn.last_unscorable = None
        with _zero3_init_off():  # reward encoders loaded lazily here are whole models, not ZeRO-3 shards
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        unscorable = self.accelerator.gather(self._unscorable_rows(len(prompts), rewards.device)).bool()
        if self.medrl_algorithm["unscorable"] == "exclude" and unscorable.any():
            rewards = rewards.clone()
            rewards[unscorable] = torch.nan  # all-NaN row: TRL leaves it out and gives advantage 0
        self._last_unscorable = unscorable
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["unscorable_frac"].append(unscorable.float().mean().item())
        self._last_rewards = rewards  # gathered over processes: (N_total, num_rewards)
        self._last_texts = [completion_text(c) for c in completions]
        self._last_ids = [list(ids) for ids in completion_ids_list]
        return rewards

    def _unscorable_rows(self, n: int, device) -> torch.Tensor:
        """(n,) uint8: 1 for local rows some reward marked UNSCORABLE (``fn.last_unscorable``)."""
        rows = torch.zeros(n, dtype=torch.uint8, device=device)
        for fn, name in zip(self.reward_funcs, self.reward_func_names):
            idx = getattr(fn, "last_unscorable", None)
            if not idx:
                continue
            bad = [i for i in idx if not (isinstance(i, numbers.Integral) and 0 <= i < n)]
            if bad:
                raise ValueError(f"reward {name!r}: last_unscorable has rows {bad[:5]} outside this batch of {n}")
            rows[[int(i) for i in idx]] = 1
        return rows

    def _shared_correctness(self, inputs: list[dict], completions) -> None:
        """Decide every rollout's correctness once (and every CAPO corrupted rollout's), for all
        rewards that read it: the ``correct`` / ``corrupted_correct`` columns
        (:func:`medrl.rewards.correctness.correctness_column`, mode ``algorithm.correctness``)."""
        from medrl.parsing import completion_text, parse_response
        from medrl.rewards.correctness import correctness_column, uses_correctness, uses_corrupted_correctness

        if not inputs or not any(uses_correctness(f) for f in self.reward_funcs):
            return
        texts = {"correct": [completion_text(c) for c in completions]}
        if CORRUPTED_COLUMN in inputs[0] and any(uses_corrupted_correctness(f) for f in self.reward_funcs):
            texts["corrupted_correct"] = [x[CORRUPTED_COLUMN] for x in inputs]
        key = "images" if "images" in inputs[0] else "image"
        k = len(texts)
        ok = correctness_column(
            [parse_response(t).answer for col in texts.values() for t in col],
            [x.get("answer") for x in inputs] * k, questions=[x.get("question") for x in inputs] * k,
            answer_types=[x.get("answer_type") for x in inputs] * k,
            open_ended=[x.get("open_ended") for x in inputs] * k, images=[x.get(key) for x in inputs] * k,
            mode=self.medrl_algorithm.get("correctness", "auto"), judge=self.judge,
        )
        n = len(inputs)
        for j, name in enumerate(texts):
            for x, v in zip(inputs, ok[j * n:(j + 1) * n]):
                x[name] = v
        decided = [v for v in ok[:n] if v is not None]
        if decided:
            mode = "train" if self.model.training else "eval"
            self._metrics[mode]["correctness/correct_frac"].append(sum(decided) / len(decided))

    # ---------------------------------------------------------------- batch

    def _generate_and_score_completions(self, inputs):
        mode = "train" if self.model.training else "eval"
        if mode == "train" and self._dynamic is not None and not self._dynamic.active:
            return self._dynamic.run(self, inputs)  # DAPO dynamic sampling: calls this method once per round
        for fn in self._stateful.values():
            if hasattr(fn, "frozen"):
                fn.frozen = mode != "train"  # evaluation never moves ARMed's thresholds
        if self.medrl_algorithm.get("capo"):
            inputs = self._capo_corrupted_rollouts(inputs, mode)
        out = super()._generate_and_score_completions(inputs)

        n = len(inputs)
        start = self.accelerator.process_index * n
        local = self._last_rewards[start : start + n]
        if self.medrl_algorithm["unscorable"] == "exclude":
            keep = (~self._last_unscorable[start : start + n]).to(out["completion_mask"].device)
            keep = keep.to(out["completion_mask"].dtype).unsqueeze(1)
            out["completion_mask"] = out["completion_mask"] * keep
            loss_mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
            out["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        step_valid = self._step_validity(n)
        seq_advantages = out["advantages"]  # (B,) A_i, before MRPO shaping
        if self.medrl_algorithm["advantage"] == "mrpo":
            out["advantages"] = self._mrpo_advantages(out, local, step_valid, mode)
        self._log_medrl_metrics(mode, step_valid)
        if mode == "train":
            self._write_reward_samples()
            self._monitor.observe(self, inputs, local)  # hacking signals and alerts (medrl.train.monitor)
        # keep last: logs out["advantages"] exactly as _compute_loss will receive them
        if mode == "train" and self._credit.due(self.state.global_step) and self.accelerator.is_main_process:
            self._credit.log(self, inputs, out, seq_advantages, local, step_valid)
        return out

    def _write_reward_samples(self) -> None:
        """Append this step's raw and adaptive semantic rewards of ARMed rewards to
        ``<output_dir>/reward_samples.jsonl`` (``{"step", "bertscore": [...],
        "bertscore_adaptive": [...], ...}``): the input of ARMed Fig. 3 in
        ``medrl analyze training RUN --samples RUN/reward_samples.jsonl``."""
        import os

        row: dict[str, Any] = {}
        for fn in self._stateful.values():
            sem = getattr(fn, "semantic", fn)
            raw, adapted = getattr(sem, "last_raw", None), getattr(sem, "last_adapted", None)
            if not raw or not adapted:
                continue
            for k in raw:
                row[k] = [float(v) for v in raw[k] if v is not None]
                row[f"{k}_adaptive"] = [float(v) for v in adapted.get(k, []) if v is not None]
        if row and self.accelerator.is_main_process:
            row = {"step": int(self.state.global_step), **row}
            from medrl.jsonl import append_jsonl

            append_jsonl(os.path.join(self.args.output_dir, "reward_samples.jsonl"), [row], fsync=False)

    def _step_validity(self, n: int) -> list[list[bool] | None] | None:
        """Per local rollout, the judge's step validities from the process reward, or None."""
        fn = self._process_fn
        if fn is None:
            return None
        verdicts = getattr(fn, "last_step_verdicts", None)
        if verdicts is None or len(verdicts) != n:
            raise RuntimeError(
                f"process reward {getattr(fn, '__name__', fn)!r} did not expose last_step_verdicts for "
                f"this batch ({None if verdicts is None else len(verdicts)} entries, expected {n})"
            )
        return [None if v is None else [bool(getattr(x, "valid", x)) for x in v] for v in verdicts]

    def _mrpo_advantages(self, out, local_rewards, step_valid, mode) -> torch.Tensor:
        from medrl.advantages import mrpo_token_advantages
        from medrl.parsing import step_token_spans

        mrpo = self.medrl_algorithm["mrpo"]
        steps = getattr(self._process_fn, "last_steps", None)
        n, num_tokens = out["completion_ids"].shape
        if steps is None or len(steps) != n:
            raise RuntimeError(f"process reward {mrpo['process_reward']!r} did not expose last_steps for this batch")
        flags: list[list[bool] | None] = []
        spans: list[list[tuple[int, int]] | None] = []
        for i in range(n):
            v, st = step_valid[i], steps[i]
            if v is None or st is None or len(v) != len(st) or not st:
                flags.append(None)
                spans.append(None)
                continue
            offsets = completion_token_offsets(self._tokenizer, self._last_texts[i], self._last_ids[i])
            flags.append(v)
            spans.append(step_token_spans(self._last_texts[i], st, offsets))
        r_ans = local_rewards[:, self._answer_idx].to(out["advantages"].device)
        adv = mrpo_token_advantages(
            out["advantages"], r_ans, flags, spans, num_tokens,
            tau=mrpo["tau"], shaping=mrpo["shaping"], strategy=mrpo["strategy"],
        )
        judged = [i for i in range(n) if flags[i] is not None]
        if mrpo["strategy"] == "selective":
            reshaped = sum(1 for i in judged if float(r_ans[i]) <= mrpo["tau"])
        else:
            reshaped = len(judged)
        self._metrics[mode]["mrpo/reshaped_frac"].append(reshaped / max(n, 1))
        return adv

    # ---------------------------------------------------------------- CAPO

    def _capo_corrupted_rollouts(self, inputs: list[dict], mode: str) -> list[dict]:
        """Roll every prompt out once more on a corrupted image; add the texts as a column."""
        from trl.data_utils import prepare_multimodal_messages

        from medrl.data.corruption import corrupt_image

        cfg = self.medrl_algorithm["capo"]
        key = "images" if "images" in inputs[0] else "image"
        rows, prompts = [], []
        for x in inputs:
            imgs = x.get(key)
            imgs = list(imgs) if isinstance(imgs, (list, tuple)) else ([imgs] if imgs is not None else [])
            if not imgs:
                raise ValueError(f"CAPO needs an image in every record; record {x.get('record_id')!r} has none")
            seed = _stable_seed(x.get("record_id") or x.get("question"), cfg["seed"], self.state.global_step)
            corrupted = [corrupt_image(im, cfg["kind"], int(cfg["t"]), seed + j) for j, im in enumerate(imgs)]
            prompts.append(prepare_multimodal_messages(x["prompt"], images=corrupted))
            rows.append(dict(x))
        g = self.num_generations if mode == "train" else self.num_generations_eval
        prompt_ids, images, mm_fields = self._tokenize_prompts(prompts)
        ids, _ = self._generate_single_turn(prompt_ids, images, mm_fields, g)
        texts = self.processing_class.batch_decode(ids, skip_special_tokens=True)
        for x, t in zip(rows, texts, strict=True):
            x[CORRUPTED_COLUMN] = t
        self._metrics[mode]["capo/corrupted_mean_length"].append(sum(len(i) for i in ids) / max(len(ids), 1))
        return rows

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

    # ---------------------------------------------------------------- checkpoints

    def _save_checkpoint(self, model, trial):
        import os

        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        super()._save_checkpoint(model, trial)
        if self._stateful and self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            callbacks.save_reward_state(folder, self._stateful.values())

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        callbacks.reload_renamed_weights(self, resume_from_checkpoint, model if model is not None else self.model)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None and self._stateful:
            restored = callbacks.load_reward_state(checkpoint, self._stateful.values())
            if restored:
                log.info("restored reward state %s from %s", restored, checkpoint)
