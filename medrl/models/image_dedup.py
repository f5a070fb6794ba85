"""Each distinct image processed and encoded once per pass, not once per rollout.

Why: GRPO repeats every prompt once per rollout, so a batch of 4 prompts x 8 rollouts hands the
processor and the model 32 images of which 4 differ; TRL processes them twice per step (for
generation and for the forward passes) and its generation, reference and policy passes each run
the vision tower on all 32. Two wrappers remove the repeats without touching TRL's code:

- **Encoding** (:func:`dedup_image_encoder`): the model's ``get_image_features`` (on the model
  instance only; the class is untouched) becomes :class:`DedupImageEncoder`, which

  1. splits the call's pixel input into its images (the family's :class:`Layout`),
  2. groups exactly equal images (a sampled fingerprint proposes, ``torch.equal`` decides: two
     images are merged only when every pixel value and every per-image companion such as
     ``image_grid_thw`` is identical),
  3. runs the original ``get_image_features`` on the distinct images only, and
  4. hands every image its features back (``pooler_output`` and Qwen3-VL's
     ``deepstack_features``, the fields the models' ``forward`` reads), by reference: autograd
     sums the gradients of the copies onto the one encoding. The forward pass is bit-identical to
     the plain path; the gradients equal it up to the order of floating-point additions.

  A call it cannot de-duplicate exactly takes the plain path unchanged: a family without a
  layout, an unexpected pixel shape, a call asking for the tower's hidden states or attentions
  (``output_hidden_states``, ``output_attentions``, ``return_dict=False``: those fields are per
  encoded image and are not rebuilt), a tower with active dropout in training (copies would share
  one dropout mask instead of drawing their own), or a batch without repeats.

- **Processing** (:func:`dedup_image_processing`, a context): while active, the processor's image
  processor preprocesses each distinct image of a call once (images compared by mode, size and a
  digest of their bytes) and repeats the result, for image processors whose output is Qwen's
  patch rows plus ``image_grid_thw`` (checked on the result); any other input or output is
  processed as given. It is installed only for the duration of a step (an instance attribute
  would otherwise be saved with the processor's config).

The encoding layouts (``model.config.model_type`` of the module that owns ``get_image_features``):

==============================  ===========================================================
family                          one image of the call
==============================  ===========================================================
qwen2_vl, qwen2_5_vl, qwen3_vl  ``image_grid_thw[i].prod()`` rows of ``pixel_values``
gemma3, internvl, llava         ``pixel_values[i]`` (InternVL: one tile; LLaVA without
                                ``image_sizes``)
llava_next                      ``pixel_values[i]`` (its crops) with ``image_sizes[i]``
smolvlm                         ``pixel_values[i]`` (a sample's images) with its
                                ``pixel_attention_mask[i]``
==============================  ===========================================================
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

__all__ = ["LAYOUTS", "DedupImageEncoder", "DedupImageProcessing", "Layout", "dedup_image_encoder",
           "dedup_image_processing", "dedup_stats", "encoder_owners", "remove_image_dedup"]

#: how many evenly spaced values of each image make its fingerprint (grouping only proposes)
_SAMPLES = 16


@dataclass(frozen=True)
class Layout:
    """Where one image's values lie in a ``get_image_features`` call.

    ``rows_from``: the argument whose per-image product gives each image's row count in
    ``pixel_values`` (Qwen's ``image_grid_thw``); None: one image per index of ``pixel_values``'s
    first dimension. ``pixel_dims``: the dimensions ``pixel_values`` has in that layout (another
    shape takes the plain path). ``companions``: per-image arguments (indexed like the images) that must be
    equal too and are selected with them. ``absent``: arguments that must be None for this layout
    to apply (LLaVA's ``image_sizes`` changes how features are split).
    """

    pixel_dims: int
    rows_from: str | None = None
    companions: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


GRID = Layout(2, rows_from="image_grid_thw", companions=("image_grid_thw",))
BATCH = Layout(4)

#: ``config.model_type`` of the module owning ``get_image_features`` -> its layout
LAYOUTS: dict[str, Layout] = {
    "qwen2_vl": GRID,
    "qwen2_5_vl": GRID,
    "qwen3_vl": GRID,
    "gemma3": BATCH,
    "internvl": BATCH,
    "llava": Layout(4, absent=("image_sizes",)),
    "llava_next": Layout(5, companions=("image_sizes",)),
    "smolvlm": Layout(5, companions=("pixel_attention_mask",)),
}

#: keyword arguments that ask for per-image fields this wrapper does not rebuild
_PLAIN_IF_SET = ("output_hidden_states", "output_attentions")


@dataclass
class DedupStats:
    calls: int = 0  # calls that took the de-duplicated path
    plain_calls: int = 0  # calls left to the plain path (no repeats or not understood)
    images: int = 0  # images asked for in de-duplicated calls
    encoded: int = 0  # images the tower encoded in those calls
    plain_reasons: dict = field(default_factory=dict)

    def plain(self, why: str) -> None:
        self.plain_calls += 1
        self.plain_reasons[why] = self.plain_reasons.get(why, 0) + 1


class DedupImageEncoder:
    """``get_image_features`` of one module, encoding each distinct image of a call once.

    Installed as the instance attribute ``module.get_image_features`` by
    :func:`dedup_image_encoder`; it calls the class's own method for the encoding. It keeps the
    original signature (``inspect.signature``), so generation's encoder-argument lookup sees the
    same parameters. ``stats`` counts what it did (:class:`DedupStats`).
    """

    def __init__(self, module: torch.nn.Module, layout: Layout):
        self.module = module
        self.layout = layout
        self.stats = DedupStats()
        self._dropout: bool | None = None  # _has_dropout(module), looked up once

    # the original method, bound now (a deep copy of the module holds its own wrapper)
    def _original(self):
        return type(self.module).get_image_features.__get__(self.module)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self._original())

    def __call__(self, *args: Any, **kwargs: Any):
        original = self._original()
        call = _bind(original, args, kwargs)
        plan = self._plan(call)
        if isinstance(plan, str):
            self.stats.plain(plan)
            return original(*args, **kwargs)
        inverse, keep = plan
        out = original(**_select(call, self.layout, keep))
        expanded = _expand(out, inverse)
        if expanded is None:  # a result this wrapper does not know how to hand back
            self.stats.plain("unknown output")
            return original(*args, **kwargs)
        self.stats.calls += 1
        self.stats.images += len(inverse)
        self.stats.encoded += len(keep)
        return expanded

    def _plan(self, call: dict) -> tuple[list[int], list[int]] | str:
        """``(inverse, keep)``: each image's index among the distinct ones, and the distinct
        images' indices; or why the call takes the plain path."""
        lay = self.layout
        pixels = call.get("pixel_values")
        if not isinstance(pixels, torch.Tensor) or pixels.dim() != lay.pixel_dims:
            return "layout not understood"
        if any(call.get(k) for k in _PLAIN_IF_SET) or call.get("return_dict") is False:
            return "per-image outputs asked"
        if any(call.get(k) is not None for k in lay.absent):
            return "layout not supported"
        if self.module.training and torch.is_grad_enabled():
            if self._dropout is None:
                self._dropout = _has_dropout(self.module)
            if self._dropout:
                return "dropout active"
        bounds = _image_bounds(pixels, call, lay)
        if bounds is None:
            return "layout not understood"
        companions = []
        for name in lay.companions:
            comp = call.get(name)
            if comp is None:
                continue
            if not isinstance(comp, torch.Tensor) or comp.shape[0] != len(bounds):
                return "layout not understood"
            companions.append(comp)
        inverse, keep = _group(pixels, bounds, companions)
        if len(keep) == len(inverse):
            return "no repeats"
        return inverse, keep


def _bind(fn, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by name (``**kwargs`` flattened in)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    out = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise TypeError("get_image_features takes no extra positional arguments")
        else:
            out[name] = value
    return out


def _image_bounds(pixels: torch.Tensor, call: dict, lay: Layout) -> list[tuple[int, int]] | None:
    """``[(start, end)]`` along ``pixels``'s first dimension for every image, or None."""
    if lay.rows_from is None:
        return [(i, i + 1) for i in range(pixels.shape[0])]
    sizes = call.get(lay.rows_from)
    if not isinstance(sizes, torch.Tensor) or sizes.dim() != 2:
        return None
    rows = sizes.prod(-1).tolist()
    if sum(rows) != pixels.shape[0]:
        return None
    bounds, start = [], 0
    for r in rows:
        bounds.append((start, start + int(r)))
        start += int(r)
    return bounds


def _group(pixels: torch.Tensor, bounds: list[tuple[int, int]], companions: list[torch.Tensor]
           ) -> tuple[list[int], list[int]]:
    """Exact grouping of equal images: ``(inverse, keep)`` with ``keep`` in order of first
    appearance. A fingerprint (shape, a few sampled values, the companions' values) proposes a
    match; ``torch.equal`` on the whole image and companions confirms it (NaN never matches)."""
    samples = []
    for a, b in bounds:
        flat = pixels[a:b].reshape(-1)
        n = flat.numel()
        idx = torch.linspace(0, max(n - 1, 0), steps=min(_SAMPLES, n), device=flat.device).long()
        samples.append(flat[idx] if n else flat)
    width = max((s.numel() for s in samples), default=0)
    table = torch.stack([torch.nn.functional.pad(s, (0, width - s.numel())) for s in samples]).tolist()
    comp_vals = [c.reshape(c.shape[0], -1).tolist() for c in companions]
    reps: dict[tuple, list[int]] = {}  # fingerprint -> indices (in `keep`) of distinct images with it
    keep: list[int] = []
    inverse: list[int] = []
    for i, (a, b) in enumerate(bounds):
        key = (tuple(pixels[a:b].shape), tuple(table[i]), tuple(tuple(v[i]) for v in comp_vals))
        match = None
        for k in reps.get(key, ()):
            j = keep[k]
            ja, jb = bounds[j]
            if torch.equal(pixels[a:b], pixels[ja:jb]) and all(torch.equal(c[i], c[j]) for c in companions):
                match = k
                break
        if match is None:
            match = len(keep)
            keep.append(i)
            reps.setdefault(key, []).append(match)
        inverse.append(match)
    return inverse, keep


def _select(call: dict, lay: Layout, keep: list[int]) -> dict:
    """The call's arguments restricted to the images ``keep``."""
    out = dict(call)
    pixels = call["pixel_values"]
    bounds = _image_bounds(pixels, call, lay)
    if lay.rows_from is None:
        out["pixel_values"] = pixels[keep]
    else:
        out["pixel_values"] = torch.cat([pixels[bounds[i][0]:bounds[i][1]] for i in keep])
    for name in lay.companions:
        if call.get(name) is not None:
            out[name] = call[name][keep]
    return out


def _per_image(value: Any, inverse: list[int], n_kept: int) -> Any:
    """``value`` (a tensor or list with one entry per distinct image) for every image."""
    if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == n_kept:
        return value[torch.as_tensor(inverse, device=value.device)]
    if isinstance(value, (list, tuple)) and len(value) == n_kept:
        return type(value)(value[j] for j in inverse)
    raise _Unknown


class _Unknown(Exception):
    pass


def _expand(out: Any, inverse: list[int]) -> Any:
    """A result of the same class holding the per-image fields for every image (the distinct
    encodings shared by reference), or None when ``out`` is not a result it knows."""
    n_kept = max(inverse) + 1
    pooled = getattr(out, "pooler_output", None)
    if pooled is None or not hasattr(out, "keys"):
        return None
    try:
        fields = {"pooler_output": _per_image(pooled, inverse, n_kept)}
        deep = getattr(out, "deepstack_features", None)
        if deep is not None:  # Qwen3-VL: one entry per tower layer, each per image
            fields["deepstack_features"] = [_per_image(layer, inverse, n_kept) for layer in deep]
    except _Unknown:
        return None
    return type(out)(**fields)


def _has_dropout(module: torch.nn.Module) -> bool:
    """Whether a dropout outside the language model could act in training: a ``Dropout`` module
    with p > 0, or a ``*dropout*`` rate > 0 in the vision config or the top-level config (whose
    text settings live in ``text_config``)."""
    for name, sub in module.named_modules():
        if name.startswith("language_model"):
            continue
        if isinstance(sub, torch.nn.modules.dropout._DropoutNd) and sub.p > 0:
            return True
    cfg = getattr(module, "config", None)
    for section in (getattr(cfg, "vision_config", None), cfg):
        for key, value in (vars(section) if section is not None else {}).items():
            if "dropout" in key and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                return True
    return False


def encoder_owners(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules whose class defines ``get_image_features`` and holds the encoding itself
    (no submodule defines it: the inner ``*Model``, not the ``*ForConditionalGeneration`` that
    delegates to it)."""
    found = [m for m in model.modules() if callable(getattr(type(m), "get_image_features", None))]
    return [m for m in found if not any(s is not m and s in found for s in m.modules())]


def dedup_image_encoder(model: torch.nn.Module) -> bool:
    """Install :class:`DedupImageEncoder` on ``model`` (any wrapper around it: PEFT, DDP).

    Returns True when installed (or already there); False when the model has no image encoder
    or its family has no layout in :data:`LAYOUTS` (it then runs as before)."""
    installed = False
    for owner in encoder_owners(model):
        if isinstance(owner.__dict__.get("get_image_features"), DedupImageEncoder):
            installed = True
            continue
        layout = LAYOUTS.get(getattr(getattr(owner, "config", None), "model_type", None))
        if layout is None:
            continue
        owner.get_image_features = DedupImageEncoder(owner, layout)
        installed = True
    return installed


def remove_image_dedup(model: torch.nn.Module) -> None:
    """Undo :func:`dedup_image_encoder` (the class's ``get_image_features`` is seen again)."""
    for owner in encoder_owners(model):
        if isinstance(owner.__dict__.get("get_image_features"), DedupImageEncoder):
            del owner.__dict__["get_image_features"]


def dedup_stats(model: torch.nn.Module) -> DedupStats | None:
    """The installed wrapper's counts (the first one found), or None when none is installed."""
    for owner in encoder_owners(model):
        enc = owner.__dict__.get("get_image_features")
        if isinstance(enc, DedupImageEncoder):
            return enc.stats
    return None


# ----------------------------------------------------------------------------- processing


def _flat_images(images: Any) -> list | None:
    """The PIL images of a preprocess call in the order the image processor reads them (a list,
    or a list of per-sample lists); None for any other input."""
    from PIL import Image

    if isinstance(images, Image.Image):
        return [images]
    if not isinstance(images, (list, tuple)):
        return None
    flat = []
    for item in images:
        if isinstance(item, Image.Image):
            flat.append(item)
        elif isinstance(item, (list, tuple)) and all(isinstance(x, Image.Image) for x in item):
            flat.extend(item)
        else:
            return None
    return flat


def _digest(img) -> tuple:
    return img.mode, img.size, hashlib.blake2b(img.tobytes(), digest_size=16).digest()


def _rows(x: Any, blocks: list[tuple[int, int]]) -> Any:
    """The row blocks of ``x`` (a numpy array or tensor) concatenated in the given order."""
    import numpy as np

    parts = [x[a:b] for a, b in blocks]
    return torch.cat(parts) if isinstance(x, torch.Tensor) else np.concatenate(parts)


@dataclass
class ProcessingStats:
    calls: int = 0  # calls that took the de-duplicated path
    plain_calls: int = 0
    images: int = 0
    processed: int = 0


class DedupImageProcessing:
    """An image processor's ``preprocess`` that processes each distinct image of a call once
    (see the module docstring); installed by :func:`dedup_image_processing`."""

    def __init__(self, image_processor: Any):
        self.image_processor = image_processor
        self.stats = ProcessingStats()

    def _original(self):
        return type(self.image_processor).preprocess.__get__(self.image_processor)

    def __call__(self, images: Any, *args: Any, **kwargs: Any):
        original = self._original()
        known_other = type(self.image_processor) in _NOT_GRID
        flat = None if args or known_other else _flat_images(images)
        if flat:
            index: dict[tuple, int] = {}  # digest -> index among the distinct images
            unique, inverse = [], []
            for img in flat:
                j = index.setdefault(_digest(img), len(unique))
                if j == len(unique):
                    unique.append(img)
                inverse.append(j)
            if len(unique) < len(flat):
                out = _expand_grid(original(unique, **kwargs), inverse)
                if out is not None:
                    self.stats.calls += 1
                    self.stats.images += len(flat)
                    self.stats.processed += len(unique)
                    return out
                _NOT_GRID.add(type(self.image_processor))  # another layout: not tried again
        self.stats.plain_calls += 1
        return original(images, *args, **kwargs)


#: image processor classes whose output is not in Qwen's layout (processed as given)
_NOT_GRID: set[type] = set()


def _expand_grid(out: Any, inverse: list[int]) -> Any:
    """A preprocess result for the distinct images -> the result for every image (Qwen's patch
    rows with ``image_grid_thw``), or None when ``out`` is not in that layout."""
    keys = set(out.keys()) if hasattr(out, "keys") else set()
    if keys != {"pixel_values", "image_grid_thw"}:
        return None
    pixels, grid = out["pixel_values"], out["image_grid_thw"]
    n_kept = max(inverse) + 1
    if len(grid) != n_kept or len(getattr(grid, "shape", ())) != 2:
        return None
    rows = [int(r) for r in (grid.prod(-1).tolist())]
    if sum(rows) != len(pixels):
        return None
    starts = [sum(rows[:j]) for j in range(n_kept)]
    blocks = [(starts[j], starts[j] + rows[j]) for j in inverse]
    data = {"pixel_values": _rows(pixels, blocks), "image_grid_thw": grid[list(inverse)]}
    return type(out)(data=data)


@contextlib.contextmanager
def dedup_image_processing(processor: Any) -> Iterator[DedupImageProcessing | None]:
    """While active, ``processor.image_processor`` preprocesses each distinct image of a call
    once (:class:`DedupImageProcessing`); yields it (None: no image processor, or already
    active). Removed on exit, so nothing of it is saved with the processor."""
    ip = getattr(processor, "image_processor", None)
    if ip is None or not callable(getattr(type(ip), "preprocess", None)) or "preprocess" in vars(ip):
        yield None
        return
    wrapper = DedupImageProcessing(ip)
    ip.preprocess = wrapper
    try:
        yield wrapper
    finally:
        vars(ip).pop("preprocess", None)
