"""ARMed: adaptive semantic reward, then medical-thinking knowledge injection.

Paper: ARMed (Liu et al. 2025, arXiv 2508.12957), Eq. 3-14, Implementation details,
"Medical Thinking Knowledge Injection".

Read top to bottom:

1. **Config** (:class:`ARMedConfig`, recipe key ``algorithm.armed``): the reward's
   coefficients (Eq. 3, 4, 14) and the constants of Adapt() (Table 3). They reach the options
   of the ARMed rewards of the run from here; their defaults are written once, in
   :mod:`medrl.rewards.armed`.
2. **Rewards** (registry names): ``armed`` = Eq. 14, (0.4 R_c + 0.4 R_as + 0.2 R_f) / 1.0, with
   the textual reward R_c (Eq. 3, lambda1) and the adaptive semantic reward R_as (Eq. 4 + 13,
   lambda2, thresholds adapted by Eq. 5-12); its parts are also registered alone
   (``armed_textual``, ``armed_semantic``, ``armed_adaptive_semantic``). Formulas:
   :mod:`medrl.rewards.armed`.
3. **Hooks**: ``state_dict`` / ``load_state_dict`` carry the adaptive thresholds (Eq. 5-12 state
   of every ARMed reward of the run, ``{"rewards": {reward name: thresholds}}``) into each
   checkpoint's ``method_state.json`` and back on resume; ``before_rewards`` freezes them during
   evaluation (an evaluation batch never moves a threshold). ``log`` writes each step's raw and
   adapted semantic rewards to ``<run>/reward_samples.jsonl`` (the input of ARMed Fig. 3,
   ``medrl analyze training``).
4. **Stage** ``knowledge_injection`` (registered here in :data:`medrl.methods.stages.STAGES`;
   "Medical Thinking Knowledge Injection"): exemplar questions picked by
   :func:`medrl.data.curation.exemplars.knowledge_exemplars`; the RL-trained model (ARMed-I)
   writes their chain of thought, which becomes the record's ``gold_reasoning`` (the reference
   answer stays the target; only chains whose answer the shared correctness decision accepts are
   kept); the next ``sft`` stage trains on that set. The recipe's pipeline: RL (ARMed-I) ->
   knowledge injection -> SFT (ARMed-A) -> RL (ARMed-R), run by
   :func:`medrl.train.pipeline.run_recipe`.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from medrl.methods.base import METHODS, MedBatch, Method, MethodConfig, reward_option
from medrl.methods.context import StepContext
from medrl.methods.stages import StageRun, register_stage
from medrl.rewards.armed import AdaptiveSemanticReward, AdaptiveThreshold, ArmedReward

log = logging.getLogger(__name__)


class ARMedConfig(MethodConfig):
    """``algorithm.armed``: ARMed's reward coefficients and Adapt() constants (defaults from
    :mod:`medrl.rewards.armed`, where the paper's values are written)."""

    lambda1: float = reward_option(ArmedReward, "lambda1", ge=0.0, le=1.0, description=(
        "ARMed Eq. 3: R_c = lambda1 BLEU-1 + (1 - lambda1) ROUGE-1"))
    lambda2: float = reward_option(AdaptiveSemanticReward, "lambda2", ge=0.0, le=1.0, description=(
        "ARMed Eq. 4 / 13: R_s = lambda2 BERTScore + (1 - lambda2) cosine similarity"))
    gammas: tuple[float, float, float] = reward_option(ArmedReward, "gammas", description=(
        "ARMed Eq. 14: weights of R_c, R_as and R_f (normalised by their sum)"))
    rho: float = reward_option(AdaptiveThreshold, "rho", ge=0.0, description=(
        "ARMed Eq. 5 / Table 3: rewards above rho * T_t enter the history"))
    max_history: int = reward_option(AdaptiveThreshold, "max_history", ge=1, description=(
        "ARMed Eq. 6 / Table 3: L_max, rewards kept"))
    percentile: float = reward_option(AdaptiveThreshold, "percentile", ge=0.0, le=100.0, description=(
        "ARMed Eq. 7 / Table 3: the history percentile that is the target threshold (50 = the median)"))
    max_delta: float = reward_option(AdaptiveThreshold, "max_delta", ge=0.0, description=(
        "ARMed Eq. 8 / Table 3: largest threshold move per step"))
    t_min: float = reward_option(AdaptiveThreshold, "t_min", description="ARMed Eq. 9 / Table 3: lowest threshold")
    t_max: float = reward_option(AdaptiveThreshold, "t_max", lt=1.0, description=(
        "ARMed Eq. 9 / Table 3: highest threshold (below 1)"))
    eps: float = reward_option(AdaptiveThreshold, "eps", gt=0.0, description=(
        "ARMed Eq. 10-11 / Table 3: guards the division"))
    alpha_pos: float = reward_option(AdaptiveThreshold, "alpha_pos", gt=0.0, description=(
        "ARMed Eq. 12 / Table 3: tanh slope above the threshold"))
    alpha_neg: float = reward_option(AdaptiveThreshold, "alpha_neg", gt=0.0, description=(
        "ARMed Eq. 12 / Table 3: tanh slope below the threshold"))


#: Adapt() options, as the config fields of the same names
_ADAPT = {k: k for k in ("rho", "max_history", "percentile", "max_delta", "t_min", "t_max", "eps", "alpha_pos",
                         "alpha_neg")}


#: rewards whose adaptive thresholds ARMed Fig. 3 plots
ADAPTIVE_REWARDS = ("armed", "armed_adaptive_semantic")


@METHODS.register("armed")
class ARMed(Method):
    """ARMed's adaptive semantic reward: its thresholds checkpointed, per-step samples for Fig. 3."""

    name = "armed"
    paper = "ARMed (arXiv 2508.12957), Eq. 3-14"
    Config = ARMedConfig
    section = "armed"
    rewards = {"armed": {"lambda1": "lambda1", "lambda2": "lambda2", "gammas": "gammas", **_ADAPT},
               "armed_textual": {"lambda1": "lambda1"}, "armed_semantic": {"lambda2": "lambda2"},
               "armed_adaptive_semantic": {"lambda2": "lambda2", **_ADAPT}}
    activated_by = tuple(rewards)

    def setup(self, ctx: StepContext) -> None:
        #: reward name -> ARMed reward object whose thresholds this method checkpoints
        self._stateful = {name: fn for name, fn in ctx.rewards.items()
                          if isinstance(fn, (ArmedReward, AdaptiveSemanticReward))}
        self._adaptive = list(self._stateful.values())

    def before_rewards(self, ctx: StepContext, batch: MedBatch) -> None:
        """Freeze the thresholds for an evaluation batch (they move on training batches only)."""
        for fn in getattr(self, "_stateful", {}).values():
            fn.frozen = batch.mode != "train"

    def state_rewards(self) -> list:
        return list(getattr(self, "_stateful", {}).values())

    def state_dict(self) -> dict:
        """The adaptive thresholds (ARMed Eq. 5-12 state) of each ARMed reward of the run."""
        rewards = {name: fn.state_dict() for name, fn in getattr(self, "_stateful", {}).items()}
        return {"rewards": rewards} if rewards else {}

    def load_state_dict(self, state: dict) -> None:
        """Restore the thresholds; a reward of this run missing from ``state`` is an error
        (restarting its thresholds from scratch would silently change the reward)."""
        saved = state.get("rewards", {})
        missing = sorted(set(getattr(self, "_stateful", {})) - set(saved))
        if missing:
            raise KeyError(f"ARMed: the checkpoint has no thresholds for reward(s) {missing}; saved: {sorted(saved)}")
        for name, fn in self._stateful.items():
            fn.load_state_dict(saved[name])

    def log(self, ctx: StepContext, batch: MedBatch) -> None:
        """Append this step's raw and adapted semantic rewards to ``reward_samples.jsonl``
        (``{"step", "bertscore": [...], "bertscore_adaptive": [...], ...}``)."""
        if batch.mode != "train":
            return
        row: dict[str, Any] = {}
        for fn in self._adaptive:
            sem = fn.semantic if isinstance(fn, ArmedReward) else fn
            raw, adapted = sem.last_raw, sem.last_adapted
            if not raw or not adapted:
                continue
            for k in raw:
                row[k] = [float(v) for v in raw[k] if v is not None]
                row[f"{k}_adaptive"] = [float(v) for v in adapted.get(k, []) if v is not None]
        if row and ctx.is_main_process:
            from medrl.common.jsonl import append_jsonl

            row = {"step": int(ctx.global_step), **row}
            append_jsonl(os.path.join(ctx.output_dir, "reward_samples.jsonl"), [row], fsync=False)


# --------------------------------------------------------------------------------------------
# Stage: medical-thinking knowledge injection (ARMed-I writes the chains of thought ARMed-A learns)


def knowledge_injection(model: str | os.PathLike, records: Sequence, output_dir: Path, *,
                        min_answer_count: int = 5, clusters_per_group: int = 3, max_new_tokens: int = 1024,
                        temperature: float = 0.7, batch_size: int = 8, max_records: int | None = None,
                        prompt_style: str = "think_answer", seed: int = 0, require_correct: bool = True,
                        correctness: str = "auto", judge: Any = None, trust_remote_code: bool = False) -> list:
    """ARMed knowledge-injection set: exemplars + chain of thought written by ``model`` (ARMed-I).

    The model's ``<think>`` text becomes ``gold_reasoning`` (the SFT target's reasoning); the
    reference answer stays the answer. With ``require_correct`` (default) only chains of thought
    whose ``<answer>`` the shared correctness decision accepts are kept
    (:func:`medrl.rewards.correctness.correctness_column`, mode ``correctness``, ``judge`` for
    open questions in mode auto): a chain that reaches another answer would teach reasoning that
    does not support the target. A kept generation without a ``<think>`` block leaves the record
    without gold reasoning (the SFT target falls back to evidence-based reasoning,
    :func:`medrl.data.prompts.format_target`). Counts are logged and saved in ``summary.json``;
    the set goes to ``output_dir/knowledge.jsonl``. ``trust_remote_code``: only when the run was
    started with ``--trust-remote-code``.
    """
    from medrl.data import read_jsonl, write_jsonl
    from medrl.data.curation.exemplars import knowledge_exemplars
    from medrl.models import generate, load_policy
    from medrl.answers.completion import parse_response
    from medrl.rewards.correctness import correctness_column

    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "knowledge.jsonl"
    if path.is_file():
        return read_jsonl(path)
    chosen, summary = knowledge_exemplars(
        list(records), min_count=min_answer_count, clusters_per_group=clusters_per_group, seed=seed,
        results_path=output_dir / "exemplars.jsonl",
    )
    if max_records is not None:
        chosen = chosen[:max_records]
    policy, processor = load_policy(str(model), trust_remote_code=trust_remote_code)
    texts = generate(policy, processor, chosen, max_new_tokens=max_new_tokens, temperature=temperature,
                     batch_size=batch_size, prompt_style=prompt_style, seed=seed)
    parsed = [parse_response(t) for t in texts]
    if require_correct:
        ok = correctness_column(
            [p.answer for p in parsed], [r.answer for r in chosen], questions=[r.question for r in chosen],
            answer_types=[r.answer_type for r in chosen], open_ended=[r.open_ended for r in chosen],
            images=[list(r.images) for r in chosen], mode=correctness, judge=judge)
    else:
        ok = [True] * len(chosen)
    out = []
    for rec, text, p, good in zip(chosen, texts, parsed, ok, strict=True):
        if not good:
            continue
        reasoning = (p.reasoning or "").strip()
        out.append(replace(rec, gold_reasoning=reasoning or rec.gold_reasoning,
                           extras={**rec.extras, "knowledge_cot": text}))
    counts = {"generated": len(chosen), "kept": len(out), "rejected": sum(1 for v in ok if v is False),
              "undecided": sum(1 for v in ok if v is None), "require_correct": require_correct,
              "correctness": correctness}
    log.info("knowledge injection: kept %d of %d chains of thought (%d reached another answer, %d undecided)",
             counts["kept"], counts["generated"], counts["rejected"], counts["undecided"])
    write_jsonl(out, path)
    (output_dir / "summary.json").write_text(json.dumps({**summary, "chains_of_thought": counts}, indent=2))
    return out


@register_stage("knowledge_injection", options_of=knowledge_injection,
                fixed=("model", "records", "output_dir", "judge", "trust_remote_code"), uses_judge=True, help=("ARMed's knowledge injection: the current model writes chains of thought for "
                                       "exemplar questions; the next sft stage trains on the accepted ones"))
def knowledge_injection_stage(run: StageRun) -> None:
    """The ``knowledge_injection`` stage: :func:`knowledge_injection` with the stage's options
    (the prompt style and correctness mode default to the recipe's); the set it writes becomes
    the next ``sft`` stage's records. Done before: the saved ``knowledge.jsonl`` is read back."""
    opts = dict(run.options)
    opts.setdefault("prompt_style", run.recipe.data.get("prompt_style", "think_answer"))
    opts.setdefault("correctness", run.recipe.algorithm.get("correctness", "auto"))
    trust = bool((run.recipe.model or {}).get("trust_remote_code"))  # only --trust-remote-code sets it
    run.sft_records = knowledge_injection(run.model, run.records, run.folder, judge=run.judge,
                                          trust_remote_code=trust, **opts)


__all__ = ["ADAPTIVE_REWARDS", "ARMed", "ARMedConfig", "knowledge_injection", "knowledge_injection_stage"]
