"""An RL step at its floor: the defaults and switches that keep a GRPO step close to the work it
must do (measured by ``benchmarks/step_profile.py`` against a plain-PyTorch step on the same batch).

- **Gradient checkpointing** (:func:`gradient_checkpointing_default`): TRL's ``GRPOConfig`` and
  ``SFTConfig`` turn it on, trading a second forward pass in the backward for activation memory.
  Where the run trains on the CPU (``use_cpu``, or no CUDA device) memory is not the limit and the
  recomputation is pure cost (about 4% of the harness's tiny-VLM step in the profile), so medrl
  turns it off there unless the recipe or ``--set grpo.gradient_checkpointing=...`` says otherwise. On a GPU TRL's default
  stands: the papers' 2B-8B policies with 64 rollouts of up to 1024 tokens need the memory.
- **Each distinct image processed and encoded once per pass** (:func:`speed_up_step`): GRPO
  repeats every prompt once per rollout, so TRL would process each image ``num_generations``
  times in each of its two processor calls and the vision tower would encode it as often in each
  of the generation, reference and policy passes. :mod:`medrl.models.image_dedup` wraps the
  policy's and the reference model's ``get_image_features`` and, around each
  generation-and-scoring pass, the processor's image preprocessing. It works the same on a plain
  ``trl.GRPOTrainer`` (call :func:`speed_up_step` on it), so medrl and plain-TRL runs compared
  with each other should both have it or both not (:func:`undo_step_speedups`). The forward pass
  is unchanged; gradients equal the plain path's up to the order of floating-point additions.
- **Only the completion scored** (:class:`CompletionOnlyScoring`): on the CPU, TRL's fused LM head
  scores every position of prompt and completion although only the completion has labels; with
  the phantom prompts (129 tokens) and 64-token completions that is three times the head's work in
  each pass. The wrapper hands TRL's head only the labelled positions.

:func:`speed_up_step` installs the last two (``MedGRPOTrainer`` does it in its constructor) and
:func:`undo_step_speedups` removes them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CompletionOnlyScoring", "fused_head_modules", "gradient_checkpointing_default", "score_completions_only",
           "score_every_position", "speed_up_step", "trains_on_cpu", "undo_step_speedups"]


def trains_on_cpu(kwargs: dict) -> bool:
    """Whether a trainer built from these ``GRPOConfig``/``SFTConfig`` keyword arguments runs on
    the CPU: ``use_cpu`` set, or no CUDA device."""
    if kwargs.get("use_cpu"):
        return True
    import torch

    return not torch.cuda.is_available()


def gradient_checkpointing_default(kwargs: dict) -> dict:
    """Set ``gradient_checkpointing=False`` in ``kwargs`` (in place; returned) when the run trains
    on the CPU and nothing set it; an explicit value, and GPU runs, keep theirs (TRL's default is
    on)."""
    if "gradient_checkpointing" not in kwargs and trains_on_cpu(kwargs):
        kwargs["gradient_checkpointing"] = False
    return kwargs


# ----------------------------------------------------------------------------- completion-only scoring


def fused_head_modules(model: Any) -> list[Any]:
    """The modules whose ``forward`` TRL replaced by its fused LM head (``trl.trainer.utils.
    add_fused_lm_head``: an instance ``forward`` whose code is ``_fused_forward``), wrapped or not."""
    out = []
    for m in model.modules():
        fwd = vars(m).get("forward")
        if isinstance(fwd, CompletionOnlyScoring):
            out.append(m)
        elif getattr(getattr(getattr(fwd, "__func__", None), "__code__", None), "co_name", None) == "_fused_forward":
            out.append(m)  # (functools.wraps gives it the model's forward's name; its code keeps TRL's)
    return out


class CompletionOnlyScoring:
    """``forward`` over TRL's fused LM head that scores only the positions with a label.

    TRL computes per-token log-probabilities with ``model(..., labels=labels, fused_lm_head=True)``.
    On a Triton device (CUDA, XPU) its kernel scores only the positions whose label is not -100;
    elsewhere it scores every position (fixed shapes for compiled backends), so on the CPU a GRPO
    batch whose prompts are twice as long as its completions pays for three times the head it
    needs, in the forward and the backward (the largest share of a CPU step left above the
    plain-PyTorch floor). On the CPU only (compiled backends keep TRL's fixed shapes), this
    wrapper passes the labelled tail as TRL's own ``shift_labels`` (its documented pre-shifted
    form, scored without shifting) and has the backbone hand over only the hidden states that
    predict those labels, then pads every per-token field back to TRL's ``(batch, seq_len - 1)``
    layout with TRL's value for an unlabelled position (zero / False). TRL's kernel, temperature and outputs are unchanged; each
    scored position gets the same arithmetic. Calls without labels (generation), with their own
    ``shift_labels``, off the CPU, or whose labels start at the first column go straight to
    TRL's forward; a result of another shape switches the wrapper off (the call is redone by TRL's
    forward)."""

    def __init__(self, module: Any, inner: Any):
        self.module = module
        self.inner = inner  # TRL's bound fused forward
        self.enabled = True
        self.calls = 0

    @property
    def __signature__(self):
        import inspect

        return inspect.signature(self.inner)  # generation checks its model kwargs against it

    def __call__(self, *args: Any, fused_lm_head: bool = False, labels: Any = None, **kwargs: Any):
        import torch

        plain = not (self.enabled and fused_lm_head and isinstance(labels, torch.Tensor) and labels.dim() == 2
                     and kwargs.get("shift_labels") is None and labels.device.type == "cpu")
        cols = None if plain else (labels != -100).any(0).nonzero()
        start = int(cols[0]) if cols is not None and cols.numel() else 0
        if plain or start < 2:
            return self.inner(*args, fused_lm_head=fused_lm_head, labels=labels, **kwargs)
        n, width = labels.shape[0], labels.shape[1] - 1  # TRL's per-token fields: (batch, seq_len - 1)
        keep = width - (start - 1)

        def tail(module, inputs, output):  # the hidden states at positions start-1 .. seq_len-2
            output.last_hidden_state = output.last_hidden_state[:, start - 1:-1]
            return output

        hook = self.module.base_model.register_forward_hook(tail)
        try:
            out = self.inner(*args, fused_lm_head=True, shift_labels=labels[:, start:], **kwargs)
        finally:
            hook.remove()
        lp = getattr(out, "log_probs", None)
        if not isinstance(lp, torch.Tensor) or tuple(lp.shape) != (n, keep):
            self.enabled = False  # not TRL's documented layout: leave every call to TRL from now on
            return self.inner(*args, fused_lm_head=fused_lm_head, labels=labels, **kwargs)
        for key, value in list(out.items()):
            if isinstance(value, torch.Tensor) and value.dim() == 2 and tuple(value.shape) == (n, keep):
                out[key] = torch.cat([value.new_zeros(n, width - keep), value], 1)
        self.calls += 1
        return out


def score_completions_only(model: Any) -> bool:
    """Install :class:`CompletionOnlyScoring` on every fused-LM-head module of ``model``; True when
    there was one (TRL adds the head in ``GRPOTrainer.__init__``)."""
    found = fused_head_modules(model)
    for m in found:
        fwd = vars(m)["forward"]
        if not isinstance(fwd, CompletionOnlyScoring):
            m.forward = CompletionOnlyScoring(m, fwd)
    return bool(found)


def score_every_position(model: Any) -> None:
    """Undo :func:`score_completions_only` (TRL's fused forward as TRL installed it)."""
    for m in fused_head_modules(model):
        fwd = vars(m)["forward"]
        if isinstance(fwd, CompletionOnlyScoring):
            m.forward = fwd.inner


# ----------------------------------------------------------------------------- one switch


def _models(trainer: Any) -> dict[str, Any]:
    return {name: m for name in ("model", "ref_model") if (m := getattr(trainer, name, None)) is not None}


class _ProcessOnce:
    """``trainer._generate_and_score_completions`` (an instance attribute) that runs the class's
    own method with :func:`medrl.models.image_dedup.dedup_image_processing` active on the
    trainer's processor: each distinct image of the batch is processed once per processor call."""

    def __init__(self, trainer: Any):
        self.trainer = trainer

    def __call__(self, *args: Any, **kwargs: Any):
        from medrl.models.image_dedup import dedup_image_processing

        tr = self.trainer
        with dedup_image_processing(tr.processing_class):
            return type(tr)._generate_and_score_completions(tr, *args, **kwargs)


def speed_up_step(trainer: Any) -> dict[str, bool]:
    """Install the step's speed-ups on ``trainer`` (any ``GRPOTrainer``): the image
    de-duplication on its policy and
    reference model (:func:`~medrl.models.image_dedup.dedup_image_encoder`) and around its
    generation-and-scoring pass (:func:`~medrl.models.image_dedup.dedup_image_processing`).
    and the completion-only scoring of TRL's fused LM head (:class:`CompletionOnlyScoring`).
    Returns what was installed: ``{"model": bool, "ref_model": bool, "completion_scoring": bool,
    "processing": bool}`` (a model without an image encoder, or of a family
    :data:`medrl.models.image_dedup.LAYOUTS` does not know, runs as before). Installing twice
    changes nothing."""
    from medrl.models.image_dedup import dedup_image_encoder

    models = _models(trainer)
    done = {name: dedup_image_encoder(m) for name, m in models.items()}
    done["completion_scoring"] = any([score_completions_only(m) for m in models.values()])
    if getattr(getattr(trainer, "processing_class", None), "image_processor", None) is not None:
        if not isinstance(vars(trainer).get("_generate_and_score_completions"), _ProcessOnce):
            trainer._generate_and_score_completions = _ProcessOnce(trainer)
        done["processing"] = True
    else:
        done["processing"] = False
    return done


def undo_step_speedups(trainer: Any, *, images: bool = True, scoring: bool = True) -> None:
    """Remove what :func:`speed_up_step` installed: with ``images`` the image de-duplication
    (every image processed and encoded as given), with ``scoring`` the completion-only scoring
    (TRL's fused head scores every position again)."""
    from medrl.models.image_dedup import remove_image_dedup

    for m in _models(trainer).values():
        if images:
            remove_image_dedup(m)
        if scoring:
            score_every_position(m)
    if images and isinstance(vars(trainer).get("_generate_and_score_completions"), _ProcessOnce):
        del vars(trainer)["_generate_and_score_completions"]
