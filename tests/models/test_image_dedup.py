"""Each distinct image processed and encoded once per pass (:mod:`medrl.models.image_dedup`).

For every family ``medrl build-model tiny`` knows: a batch whose images repeat, differ and are
absent gives the same loss and logits (bit for bit) and the same gradients (to float32 rounding:
the copies' gradients are summed in another order) with the de-duplicating encoder as without,
greedy generation gives the same tokens, and the processor gives the same tensors inside
:func:`~medrl.models.image_dedup.dedup_image_processing` as outside it. The grouping of equal
images is checked against exact equality on generated batches (Hypothesis): images that differ
in one value, in their grid or by NaN are never merged. Families and calls the wrapper does not
understand take the plain path.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from medrl.models.families import FAMILY_NAMES, get_family  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

_BUILT: dict = {}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """family -> (model, processor), built once per module (random weights, small vocabulary)."""
    from medrl.models import build_tiny_vlm, load_policy

    def _get(family):
        if family not in _BUILT:
            path = build_tiny_vlm(tmp_path_factory.mktemp(family) / "m", family=family, vocab_size=400)
            _BUILT[family] = load_policy(path)
        return _BUILT[family]

    return _get


def _images(family, n, seed=0):
    from PIL import Image

    size = get_family(family).image_size
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)) for _ in range(n)]


def _batch(processor, images, order, completion=" <think>It is a CT.</think><answer>yes</answer>",
           generation=False):
    """One padded batch: row i shows ``images[order[i]]`` (None: a row without an image)."""
    texts = []
    for j, k in enumerate(order):
        content = ([{"type": "image"}] if k is not None else []) + [{"type": "text", "text": f"What is shown {j}?"}]
        text = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                             tokenize=False)
        texts.append(text if generation else text + completion)
    from medrl.models.generation import _nested_images

    shown = [[images[k]] if k is not None else [] for k in order]
    if not any(shown):
        given = None
    elif _nested_images(processor):  # one list per prompt (Gemma 3, SmolVLM)
        given = shown
    else:  # the processor matches a flat list to the image placeholders in order
        given = [s for s in shown if s]
    return processor(images=given, text=texts, padding=True, return_tensors="pt")


def _loss_logits_grads(model, batch):
    model.zero_grad()
    model.train()
    out = model(**batch, labels=batch["input_ids"])
    out.loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.loss.detach(), out.logits.detach(), grads


def _assert_same(plain, dedup):
    (l0, lg0, g0), (l1, lg1, g1) = plain, dedup
    assert torch.equal(l0, l1) and torch.equal(lg0, lg1), "the forward pass changed"
    assert g0.keys() == g1.keys()
    # float32 sums in another order: equal to rounding, relative to each tensor and to the
    # largest gradient (some are zero up to rounding, e.g. an attention key bias)
    scale = max(float(g.abs().max()) for g in g0.values())
    for name in g0:
        torch.testing.assert_close(g1[name], g0[name], rtol=1e-4, atol=1e-6 * scale, msg=name)


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_same_loss_logits_gradients_and_generation(family, tiny):
    """Images that repeat (A three times, C twice) and differ (A, B, C): three encodings instead
    of six, the same forward, gradients to rounding, the same greedy tokens."""
    from medrl.models.image_dedup import dedup_image_encoder, dedup_stats, remove_image_dedup

    model, processor = tiny(family)
    images = _images(family, 3)
    order = [0, 0, 1, 0, 2, 2]
    batch = _batch(processor, images, order)
    remove_image_dedup(model)
    plain = _loss_logits_grads(model, batch)
    assert dedup_image_encoder(model)
    try:
        stats = dedup_stats(model)
        dedup = _loss_logits_grads(model, batch)
        assert (stats.calls, stats.images, stats.encoded) == (1, 6, 3), stats
        _assert_same(plain, dedup)

        prompts = _batch(processor, images, order, generation=True)
        model.eval()
        with torch.no_grad():
            a = model.generate(**prompts, max_new_tokens=4, do_sample=False)
            assert stats.calls == 2  # generation encodes the prompts' images once, before prefill
            remove_image_dedup(model)
            b = model.generate(**prompts, max_new_tokens=4, do_sample=False)
        assert torch.equal(a, b)
    finally:
        remove_image_dedup(model)
        model.train()


def test_llava_layout_of_the_default_policy():
    """The default policy's class (LLaVA with a SigLIP tower, ``medrl.models.default_policy``),
    built tiny from a config: same loss to the bit, gradients to rounding."""
    from transformers import LlavaConfig, LlavaForConditionalGeneration, SiglipVisionConfig

    from medrl.models.image_dedup import dedup_image_encoder, dedup_stats

    image_token, n_tokens = 5, (28 // 14) ** 2
    config = LlavaConfig(
        text_config=dict(model_type="llama", vocab_size=64, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1),
        vision_config=SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, image_size=28, patch_size=14, vision_use_head=False),
        image_token_index=image_token, image_seq_length=n_tokens, vision_feature_select_strategy="full",
        vision_feature_layer=-1)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    pixels = torch.randn(2, 3, 28, 28)[[0, 1, 0, 0]]  # four rows, two distinct images
    ids = torch.randint(10, 64, (4, 12))
    ids[:, 2:2 + n_tokens] = image_token
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": pixels}
    plain = _loss_logits_grads(model, batch)
    assert dedup_image_encoder(model)
    _assert_same(plain, _loss_logits_grads(model, batch))
    stats = dedup_stats(model)
    assert (stats.images, stats.encoded) == (4, 2)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "gemma3"])
def test_rows_without_an_image_and_batches_without_repeats(family, tiny):
    """Rows without an image beside rows whose images repeat: same results; a batch whose images
    all differ takes the plain path; a text-only batch never calls the encoder."""
    from medrl.models.image_dedup import dedup_image_encoder, dedup_stats, remove_image_dedup

    model, processor = tiny(family)
    images = _images(family, 2, seed=1)
    try:
        mixed = _batch(processor, images, [0, None, 0, 1, None, 1])
        remove_image_dedup(model)
        plain = _loss_logits_grads(model, mixed)
        dedup_image_encoder(model)
        _assert_same(plain, _loss_logits_grads(model, mixed))
        stats = dedup_stats(model)
        assert (stats.images, stats.encoded) == (4, 2)

        _loss_logits_grads(model, _batch(processor, images, [0, 1]))
        assert stats.plain_reasons == {"no repeats": 1}
        calls = stats.calls + stats.plain_calls
        _loss_logits_grads(model, _batch(processor, images, [None, None]))
        assert stats.calls + stats.plain_calls == calls
    finally:
        remove_image_dedup(model)


def test_calls_it_does_not_understand_take_the_plain_path(tiny, monkeypatch):
    """Asked for the tower's hidden states; a pixel tensor of another shape; active dropout in
    training; and a family without a layout (not installed at all)."""
    from medrl.models import image_dedup
    from medrl.models.image_dedup import dedup_image_encoder, dedup_stats, encoder_owners, remove_image_dedup

    model, processor = tiny("qwen2_5_vl")
    batch = _batch(processor, _images("qwen2_5_vl", 1), [0, 0])
    owner = encoder_owners(model)[0]
    try:
        dedup_image_encoder(model)
        stats = dedup_stats(model)
        with torch.no_grad():
            owner.get_image_features(batch["pixel_values"], batch["image_grid_thw"], output_hidden_states=True)
            owner.get_image_features(batch["pixel_values"][None], batch["image_grid_thw"])
        assert stats.plain_reasons == {"per-image outputs asked": 1, "layout not understood": 1}

        remove_image_dedup(model)
        owner.visual.extra_dropout = torch.nn.Dropout(0.1)  # a tower that would drop activations
        dedup_image_encoder(model)
        stats = dedup_stats(model)
        model.train()
        model(**batch)
        assert stats.plain_reasons == {"dropout active": 1}
        model.eval()
        with torch.no_grad():
            model(**batch)  # no dropout in evaluation: de-duplicated
        assert stats.calls == 1
    finally:
        del owner.visual.extra_dropout
        remove_image_dedup(model)
        model.train()

    monkeypatch.delitem(image_dedup.LAYOUTS, "qwen2_5_vl")
    assert not dedup_image_encoder(model)
    assert "get_image_features" not in vars(owner)


def test_deep_copy_and_removal(tiny):
    """A deep copy (TRL's reference model, a checkpoint) encodes with its own weights; removal
    restores the class's method."""
    from medrl.models.image_dedup import DedupImageEncoder, dedup_image_encoder, encoder_owners, remove_image_dedup

    model, _ = tiny("qwen2_5_vl")
    try:
        dedup_image_encoder(model)
        twin = copy.deepcopy(model)
        enc = vars(encoder_owners(twin)[0])["get_image_features"]
        assert isinstance(enc, DedupImageEncoder) and enc.module is encoder_owners(twin)[0]
        remove_image_dedup(twin)
        assert "get_image_features" not in vars(encoder_owners(twin)[0])
        assert isinstance(vars(encoder_owners(model)[0])["get_image_features"], DedupImageEncoder)
    finally:
        remove_image_dedup(model)


# ------------------------------------------------------------------------------ grouping


def _grid_batch(images):
    """(pixels, bounds, grids): each image a (rows, 4) block with its (1, h, w) grid."""
    from medrl.models.image_dedup import GRID, _image_bounds

    pixels = torch.cat([torch.as_tensor(x, dtype=torch.float32) for x, _ in images])
    grids = torch.tensor([g for _, g in images])
    return pixels, _image_bounds(pixels, {"image_grid_thw": grids}, GRID), grids


POOL = [(np.arange(16, dtype=np.float32).reshape(4, 4), (1, 2, 2)),
        (np.arange(16, dtype=np.float32).reshape(4, 4), (1, 1, 4)),  # same values, another grid
        (np.ones((4, 4), dtype=np.float32), (1, 2, 2)),
        (np.arange(32, dtype=np.float32).reshape(8, 4), (1, 2, 4))]


def _changed(x, where, nan):
    y = x.copy()
    y.flat[where % y.size] = np.nan if nan else y.flat[where % y.size] + 1e-3
    return y


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(POOL) - 1), st.none() | st.tuples(st.integers(0, 63), st.booleans())),
                min_size=1, max_size=12))
def test_grouping_is_exact_equality(draw):
    """Generated batches from a small pool, some images changed in one value (or set to NaN):
    two images share an encoding exactly when their values and grids are equal (NaN never)."""
    from medrl.models.image_dedup import _group

    images = [(POOL[k][0] if change is None else _changed(POOL[k][0], *change), POOL[k][1]) for k, change in draw]
    pixels, bounds, grids = _grid_batch(images)
    inverse, keep = _group(pixels, bounds, [grids])
    assert len(keep) == len(set(inverse)) and [inverse[k] for k in keep] == list(range(len(keep)))
    for i, (xi, gi) in enumerate(images):
        for j, (xj, gj) in enumerate(images[:i]):
            same = gi == gj and xi.shape == xj.shape and bool(np.array_equal(xi, xj))  # NaN != NaN
            assert (inverse[i] == inverse[j]) == same, (i, j)


# ------------------------------------------------------------------------------ processing


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_processing_gives_the_same_tensors(family, tiny):
    """Inside the context the processor returns exactly what it returns outside it (Qwen's
    families process three distinct images instead of six; the others are processed as given);
    nothing of the context is left on the image processor afterwards (it would be saved)."""
    from medrl.models.image_dedup import dedup_image_processing

    _, processor = tiny(family)
    images = _images(family, 3, seed=2)
    order = [0, 0, 1, 0, 2, 2]
    plain = _batch(processor, images, order, generation=True)
    with dedup_image_processing(processor) as wrapper:
        with dedup_image_processing(processor) as nested:
            assert nested is None  # already active: the outer one does the work
        dedup = _batch(processor, images, order, generation=True)
    assert "preprocess" not in vars(processor.image_processor)
    assert plain.keys() == dedup.keys()
    for key in plain:
        assert torch.equal(torch.as_tensor(plain[key]), torch.as_tensor(dedup[key])), key
    if family.startswith("qwen"):
        assert (wrapper.stats.calls, wrapper.stats.images, wrapper.stats.processed) == (1, 6, 3)
    else:
        assert wrapper.stats.calls == 0
