"""Load any Hugging Face vision-language model (id or folder) as a policy, optionally with LoRA.

``load_policy`` goes through the Auto classes (``AutoModelForImageTextToText`` /
``AutoProcessor``), so Qwen2-VL, Qwen2.5-VL, Qwen3-VL, InternVL3 (``-hf`` checkpoints),
SmolVLM/Idefics3, LLaVA, LLaVA-NeXT and Gemma 3 all load the same way (each family is tested
offline on a tiny build: ``medrl.models.families``, ``tests/models/test_families.py``). Fixes
applied to every processor: left padding (batched generation needs the prompt flush against the completion), a pad token
(falls back to EOS), and, where the stock processor cannot be built because its video processor
needs torchvision, the image-only variant of :mod:`medrl.models.processors`.

Shorthand names: ``"tiny"`` (:func:`medrl.models.build_tiny_vlm`, Qwen2.5-VL), ``"tiny-<family>"``
(e.g. ``"tiny-qwen3_vl"``, ``"tiny-gemma3"``; see :mod:`medrl.models.families`) and ``"default"``
(:func:`medrl.models.build_default_policy`); they are built once into
``<cache_dir>/models/<name>`` and reused.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Written into a model folder by builders whose parts start untrained (the default policy's
# vision tower and projector): with LoRA these modules are trained in full (peft modules_to_save).
POLICY_META = "medrl_policy.json"

# Language-model projections targeted by LoRA by default (Qwen2/2.5/3, Llama/SmolLM2, Mistral,
# Gemma 3, InternVL, Idefics3/SmolVLM all use these names); restricted to the language model (its
# module is ``language_model`` or, in Idefics3/SmolVLM, ``text_model``) so the vision tower is left alone.
LM_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

SHORTHANDS = ("tiny", "default")


@dataclass
class LoraSpec:
    """LoRA settings. Defaults follow the MRPO SFT baseline recipe (r=8, alpha=32, dropout 0.05;
    MRPO implementation details of the SFT baseline).

    ``target_modules=None`` targets the language model's attention and MLP projections;
    ``modules_to_save=None`` takes them from the model folder's ``medrl_policy.json`` (modules
    that start untrained and must be trained in full), else none.
    """

    r: int = 8
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] | str | None = None
    modules_to_save: list[str] | None = None

    @classmethod
    def coerce(cls, value: Any) -> "LoraSpec | Any | None":
        """None/False -> None; True -> defaults; dict -> LoraSpec(**dict) (keys ``r``, ``alpha``
        or ``lora_alpha``, ``dropout`` or ``lora_dropout``, ``target_modules``,
        ``modules_to_save``); a LoraSpec or a peft ``LoraConfig`` is returned as is."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, dict):
            d = dict(value)
            aliases = {"lora_alpha": "alpha", "lora_dropout": "dropout"}
            d = {aliases.get(k, k): v for k, v in d.items()}
            unknown = set(d) - {"r", "alpha", "dropout", "target_modules", "modules_to_save"}
            if unknown:
                raise ValueError(f"LoRA options: unknown keys {sorted(unknown)}")
            return cls(**d)
        return value


def _target_regex(names=LM_PROJECTIONS) -> str:
    # peft matches a string target with re.fullmatch against each module's full name.
    # ``language_model`` (Qwen-VL, InternVL, LLaVA, Gemma 3), ``text_model`` (Idefics3/SmolVLM)
    return r".*(language_model|text_model)\..*\.(" + "|".join(names) + r")"


def _is_shorthand(name: str) -> bool:
    if name in SHORTHANDS:
        return True
    if name.startswith("tiny-"):
        from medrl.models.families import FAMILIES

        return name[len("tiny-"):] in FAMILIES
    return False


# --------------------------------------------------------------------------------------------
# Offline first: find out once, in seconds, whether the hub can be reached


_HUB_STATE: dict[str, bool] = {}


def hub_reachable(timeout: float = 1.5) -> bool:
    """Whether a TCP connection to the hub (``$HF_ENDPOINT``, else huggingface.co; through
    ``$HTTPS_PROXY`` when set) opens within ``timeout`` seconds. DNS lookups that hang are cut
    off too (the probe runs in a daemon thread)."""
    import socket
    import threading
    from urllib.parse import urlparse

    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    url = urlparse(proxy or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme != "http" else 80)
    result: dict[str, bool] = {}

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result["ok"] = True
        except Exception:  # noqa: BLE001 - any failure means "not reachable"
            result["ok"] = False

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout + 0.5)
    return bool(result.get("ok"))


def offline_first(announce: Any = None) -> bool:
    """Work offline when the hub cannot be reached: returns True when offline.

    With ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` set, nothing is probed. Otherwise the hub
    is probed once per process (:func:`hub_reachable`); when it does not answer,
    ``HF_HUB_OFFLINE=1`` is set for this process (and for ``huggingface_hub`` if already
    imported), so models and encoders load from the local cache at once instead of retrying
    the network for minutes, and ``announce`` (default: stderr) gets one line saying so.
    """
    import sys

    from medrl.common.embeddings import hub_offline

    if hub_offline():
        return True
    if "offline" not in _HUB_STATE:
        _HUB_STATE["offline"] = not hub_reachable()
        if _HUB_STATE["offline"]:
            os.environ["HF_HUB_OFFLINE"] = "1"
            hub = sys.modules.get("huggingface_hub.constants")
            if hub is not None:
                hub.HF_HUB_OFFLINE = True
            line = ("medrl: the Hugging Face hub cannot be reached; working offline from local folders and the "
                    "local cache (set HF_HUB_OFFLINE=1 to skip this check)")
            (announce or (lambda m: print(m, file=sys.stderr)))(line)
    return _HUB_STATE["offline"]


def _cached_hub_id(name: str) -> bool:
    """Whether ``name`` is a hub id with a ``config.json`` in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - not a valid repo id
        return False


def _looks_like_hub_id(name: str) -> bool:
    import re

    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}", name)) and ".." not in name


def _run_folder_model(p: Path) -> Path | None:
    """The model a medrl run folder holds: ``final/`` (single stage) or, for multi-stage runs,
    the model of the last finished stage (``stages/NN_<name>/DONE`` names it)."""
    from medrl.common.exit_codes import ModelNotFoundError

    if (p / "final" / "config.json").is_file():
        return p / "final"
    stages = sorted(d for d in (p / "stages").glob("[0-9]*_*") if d.is_dir()) if (p / "stages").is_dir() else []
    if not stages:
        return None
    for st in reversed(stages):
        done = st / "DONE"
        if done.is_file():
            target = Path(done.read_text().strip())
            if not target.is_absolute() and not target.exists():
                target = st / target
            if (target / "config.json").is_file():
                if st != stages[-1]:
                    log.warning("%s: stage %s is not finished; using the last finished stage %s", p,
                                stages[-1].name, st.name)
                return target
        if (st / "final" / "config.json").is_file():
            return st / "final"
    raise ModelNotFoundError(f"{p}: a multi-stage run folder with no finished stage yet "
                             f"(stages: {', '.join(s.name for s in stages)})")


def resolve_model_path(name_or_path: str | os.PathLike) -> str:
    """Shorthands ``tiny``/``tiny-<family>``/``default`` -> a built folder in the cache; a medrl
    run folder -> its model (``final/``, or the last finished stage of a multi-stage run such as
    ``armed``/``stepgrpo``); a model folder or hub id unchanged.

    Fails at once (:class:`medrl.common.exit_codes.ModelNotFoundError`, "no model folder or cached hub
    id ...") when the name is neither a folder nor a hub id that can load: offline
    (:func:`offline_first`), a hub id must be in the local cache; a path whose parent folder
    exists locally (``runs/nope``) is a missing folder, not a hub id."""
    from medrl.common.exit_codes import ModelNotFoundError

    name = str(name_or_path)
    p = Path(name).expanduser()
    if p.is_dir() and not (p / "config.json").is_file():
        found = _run_folder_model(p)
        if found is not None:
            return str(found)
        if not any(p.glob("*.safetensors")) and not any(p.glob("*.bin")):
            ckpts = sorted((c for c in p.glob("checkpoint-*") if (c / "config.json").is_file()),
                           key=lambda c: int(c.name.split("-")[-1]) if c.name.split("-")[-1].isdigit() else -1)
            hint = (f"; training has not finished - its last checkpoint is {ckpts[-1]} (pass that, or resume "
                    "the run with --resume)") if ckpts else ""
            raise ModelNotFoundError(f"{name}: a folder, but no model in it (no config.json, final/ or stages/){hint}")
    if p.exists():
        return name
    if not _is_shorthand(name):
        local = name.startswith((".", "/", "~")) or (len(p.parts) > 1 and Path(p.parts[0]).is_dir()) \
            or not _looks_like_hub_id(name)
        offline = offline_first() if not local else True
        if local or (offline and not _cached_hub_id(name)):
            raise ModelNotFoundError(
                f"no model folder or cached hub id {name!r}: "
                + ("no such folder" if local else "not in the local Hugging Face cache, and the hub is offline")
                + "; pass a model folder, a run folder (its final/ or last stage is used), a cached hub id, "
                "'tiny' or 'default' (see `medrl build-model --help`)")
        return name
    from medrl.common.paths import cache_dir

    target = cache_dir() / "models" / name
    if (target / "config.json").is_file():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build in a temporary sibling folder, then rename: concurrent builders never see a half
    # written model.
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        if name.startswith("tiny"):
            from medrl.models.tiny import build_tiny_vlm

            build_tiny_vlm(tmp, family=name[len("tiny-"):] if name != "tiny" else "qwen2_5_vl")
        else:
            from medrl.models.default_policy import build_default_policy

            build_default_policy(tmp)
        try:
            tmp.rename(target)
        except OSError:  # someone else finished first
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


def prepare_processor(processor):
    """Left padding and a pad token on the processor's tokenizer (in place; returns it).

    ``padding_side`` is not always saved with a tokenizer, and batched generation needs left
    padding; a tokenizer without a pad token pads with EOS.
    """
    tok = getattr(processor, "tokenizer", processor)
    tok.padding_side = "left"
    if tok.pad_token is None:
        if tok.eos_token is None:
            raise ValueError("tokenizer has neither a pad token nor an EOS token")
        tok.pad_token = tok.eos_token
    return processor


def load_processor(name_or_path: str | os.PathLike, *, trust_remote_code: bool = False):
    """``AutoProcessor`` with the fixes of :func:`prepare_processor`; falls back to the
    image-only variant when the stock processor cannot be built (video processor/torchvision)."""
    from transformers import AutoProcessor

    from medrl.models import processors  # noqa: F401  (registers the image-only classes)

    path = resolve_model_path(name_or_path)
    try:
        processor = AutoProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
    except (ImportError, ValueError, TypeError, OSError) as err:
        processor = _image_only_processor(path, err, trust_remote_code)
    if not hasattr(processor, "image_processor"):
        raise ValueError(
            f"{path}: loaded {type(processor).__name__}, which has no image processor; "
            "not a vision-language model"
        )
    return prepare_processor(processor)


def _image_only_processor(path: str, err: Exception, trust_remote_code: bool):
    """Build the image-only variant of the model's processor from its saved parts."""
    import transformers
    from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    from medrl.models import processors

    config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    parent_name = PROCESSOR_MAPPING_NAMES.get(config.model_type)
    parent = getattr(transformers, parent_name, None) if isinstance(parent_name, str) else None
    if parent is None or parent.__name__ not in processors.IMAGE_ONLY_PARENTS:
        raise ValueError(f"{path}: could not load the processor ({err})") from err
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    image_processor = AutoImageProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
    cls = processors.image_only(parent)
    extra = {}
    proc_cfg = Path(path) / "processor_config.json"
    if proc_cfg.is_file():  # the parent's other init arguments (image_seq_len, image_seq_length, ...)
        saved = json.loads(proc_cfg.read_text())
        code = cls.__init__.__code__
        for key in code.co_varnames[1 : code.co_argcount]:
            if key in saved and key not in ("image_processor", "tokenizer", "chat_template"):
                extra[key] = saved[key]
    log.info("%s: stock processor failed (%s); using the image-only variant", path, err)
    return cls(
        image_processor=image_processor,
        tokenizer=tokenizer,
        chat_template=getattr(tokenizer, "chat_template", None),
        **extra,
    )


def _resolve_dtype(dtype):
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        return getattr(torch, dtype)
    raise ValueError(f"unknown dtype {dtype!r} (use float32, bfloat16, float16 or auto)")


def apply_lora(model, lora, *, model_dir: str | None = None):
    """Wrap ``model`` with peft LoRA adapters (``lora``: see :meth:`LoraSpec.coerce`)."""
    from peft import LoraConfig, get_peft_model

    spec = LoraSpec.coerce(lora)
    if spec is None:
        return model
    if isinstance(spec, LoraConfig):
        config = spec
    else:
        modules_to_save = spec.modules_to_save
        if modules_to_save is None and model_dir is not None:
            meta = Path(model_dir) / POLICY_META
            if meta.is_file():
                modules_to_save = json.loads(meta.read_text()).get("train_in_full") or None
        config = LoraConfig(
            r=spec.r,
            lora_alpha=spec.alpha,
            lora_dropout=spec.dropout,
            target_modules=spec.target_modules or _target_regex(),
            modules_to_save=modules_to_save,
            task_type="CAUSAL_LM",
        )
    return get_peft_model(model, config)


def load_policy(
    name_or_path: str | os.PathLike,
    *,
    lora: Any = None,
    dtype: Any = None,
    trust_remote_code: bool = False,
    device_map: Any = None,
    quantization: dict | None = None,
):
    """Load a vision-language policy and its processor: ``(model, processor)``.

    Args:
        name_or_path: a Hugging Face model id (read from the local HF cache when offline), a
            folder, or the shorthand ``"tiny"`` / ``"tiny-<family>"`` / ``"default"`` (built once
            into the cache).
        lora: None (full model), True (LoRA r=8, alpha=32, dropout 0.05 on the language model's
            projections), a dict of :class:`LoraSpec` fields, a LoraSpec or a peft LoraConfig.
        dtype: torch dtype or its name; None -> float32 (what TRL uses by default).
        trust_remote_code: passed to the Auto classes (models shipping their own code); off unless
            the user says so (``--trust-remote-code``). medrl's own folders load without it: their
            image-only processor is registered when :mod:`medrl.models.processors` is imported.
        device_map: passed to ``from_pretrained`` (None keeps the model on CPU).
        quantization: ``transformers.BitsAndBytesConfig`` arguments (``load_in_4bit=True``, ...):
            QLoRA. The weights load quantized on this process's GPU; with ``lora``, peft's
            ``prepare_model_for_kbit_training`` readies them and only the adapters train (4-bit
            weights cannot be trained in full). Needs bitsandbytes (:func:`quantization_problem`).

    The model's generation config gets the tokenizer's pad token; the processor pads on the left.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    path = resolve_model_path(name_or_path)
    processor = load_processor(path, trust_remote_code=trust_remote_code)
    kwargs = dict(dtype=_resolve_dtype(dtype), trust_remote_code=trust_remote_code)
    if quantization:
        why = quantization_problem(quantization)
        if why:
            raise ImportError(why)
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(**quantization)
        kwargs["dtype"] = _resolve_dtype(quantization.get("bnb_4bit_compute_dtype", "bfloat16"))
        if device_map is None:  # each process holds its own quantized copy, on its own GPU
            import torch

            if torch.cuda.is_available():
                device_map = {"": int(os.environ.get("LOCAL_RANK", "0"))}
    if device_map is not None:
        kwargs["device_map"] = device_map
    config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    try:
        model = AutoModelForImageTextToText.from_pretrained(path, **kwargs)
    except ValueError as err:
        if "Unrecognized configuration class" not in str(err):
            raise
        # Remote-code VLMs (e.g. the original InternVL3 checkpoints) register as causal LMs.
        log.info("%s: not an image-text-to-text model class (%s); trying AutoModelForCausalLM", path, config.model_type)
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    tok = getattr(processor, "tokenizer", processor)
    gen = getattr(model, "generation_config", None)
    if gen is not None and gen.pad_token_id is None:
        gen.pad_token_id = tok.pad_token_id
    if quantization and lora is not None and lora is not False:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model)
    if lora is not None and lora is not False:
        model = apply_lora(model, lora, model_dir=path if Path(path).is_dir() else None)
    return model, processor


#: the extra that installs what 4-bit loading needs
QLORA_INSTALL = "pip install 'medrl[qlora]'"


def quantization_problem(quantization: dict | None = None) -> str | None:
    """One line saying why 4-bit loading cannot run on this machine (None when it can): no
    bitsandbytes, or a bitsandbytes with no backend here (no CUDA GPU; the CPU backend of recent
    releases where it has one). Asks transformers' own bitsandbytes quantizer, as loading does."""
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is None:
        return f"4-bit loading (QLoRA, model.load_in_4bit) needs bitsandbytes, which is not installed: {QLORA_INSTALL}"
    try:
        from transformers import BitsAndBytesConfig
        from transformers.quantizers.quantizer_bnb_4bit import Bnb4BitHfQuantizer

        Bnb4BitHfQuantizer(BitsAndBytesConfig(**(quantization or {"load_in_4bit": True}))).validate_environment(
            device_map=None)
    except Exception as exc:  # noqa: BLE001 - ImportError, RuntimeError: no backend for this device
        return ("4-bit loading (QLoRA, model.load_in_4bit) cannot run here: bitsandbytes has no backend on this "
                f"machine ({' '.join(str(exc).split())[:200]}); use a CUDA GPU")
    return None


def save_policy(model, processor, out_dir: str | os.PathLike, *, merge_lora: bool = True) -> Path:
    """Save a (possibly LoRA-wrapped) policy and its processor as a loadable model folder.

    LoRA adapters are merged into the base weights (``merge_lora=True``) so the folder loads
    with :func:`load_policy`, TRL (``model=<path>``, reference model reloads) and plain
    ``from_pretrained``; with ``merge_lora=False`` a peft model saves its adapter only.
    Image-only processors get their code shipped (``processing_medrl.py`` + ``auto_map``).
    """
    from medrl.models import processors

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if merge_lora and hasattr(model, "merge_and_unload") and hasattr(model, "peft_config"):
        model = model.merge_and_unload()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    name = type(processor).__name__
    if name in processors._CLASSES:
        from medrl.models.tiny import ship_processor_code

        ship_processor_code(out, name)
    return out

