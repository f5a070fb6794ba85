"""What a model folder must hold before a run loads it, checked in seconds and named by file.

A run loads the tokenizer, the processor, the chat template and the weights of ``--model``; a
damaged one of them used to pass the preflight and crash later with a raw traceback. The checks
here load what the run loads, in the order it loads it, and stop at the first problem with one
line naming the file (:class:`medrl.common.exit_codes.ModelDamagedError`, exit 5):

- every JSON file of the folder parses (``config.json``, ``tokenizer.json``, the processor's
  and image processor's configs, ...): a cut or garbage file is named;
- each safetensors weights file agrees with its own header (:func:`safetensors_problem`): every
  tensor's byte range is as long as its dtype and shape say, the ranges follow one another
  without gap or overlap, and the file is exactly as long as the header declares;
- every floating-point weight is finite (:func:`nonfinite_problem`): a model with NaN or
  infinite weights trains nothing and scores nothing;
- the config, the tokenizer and the processor load as the run loads them
  (:func:`medrl.models.loading.load_processor`), with ``trust_remote_code`` only when asked;
- the chat template renders one prompt (an image and a question) and the processor turns it,
  with a small image, into model inputs.

:func:`check_model` runs them all; ``medrl train``, ``sft``, ``eval`` and ``data`` call it before
their work (``medrl.cli``), and ``medrl train --dry-run`` as part of its preflight.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

#: bytes per element of each safetensors dtype (dtypes not listed are not size-checked)
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4,
               "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "C64": 8}

#: a safetensors header larger than this is not a header (the format caps it at 100 MB)
MAX_HEADER = 100 * 1024 * 1024

#: JSON files a model folder may hold that the loaders parse
JSON_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
              "special_tokens_map.json", "added_tokens.json", "vocab.json", "preprocessor_config.json",
              "processor_config.json", "video_preprocessor_config.json", "chat_template.json",
              "model.safetensors.index.json", "adapter_config.json")

#: where a folder's chat template may live, in the order transformers reads them
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json", "processor_config.json", "tokenizer_config.json")


def safetensors_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not a safetensors file that agrees with its own header (None when it is):
    a header cut short or not JSON, a tensor whose byte range does not match its dtype and shape,
    ranges with gaps or overlaps, a file shorter (cut short) or longer than the header says."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"{path.name} is {size} bytes (no header)"
            (n,) = struct.unpack("<Q", head)
            if n > size - 8:
                return f"{path.name} is cut short ({size} bytes, header alone needs {n + 8})"
            if n > MAX_HEADER:
                return f"{path.name}: its header claims {n:,} bytes (more than the format allows)"
            header = json.loads(fh.read(n))
    except (OSError, ValueError) as exc:
        return f"{path.name} cannot be read ({' '.join(str(exc).split())[:200]})"
    if not isinstance(header, dict):
        return f"{path.name}: its header is not a JSON object"
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = (int(x) for x in info["data_offsets"])
            shape = [int(d) for d in info["shape"]]
            dtype = str(info["dtype"])
        except (KeyError, TypeError, ValueError):
            return f"{path.name}: tensor {name!r} has no valid dtype, shape and data_offsets in the header"
        if begin < 0 or end < begin or any(d < 0 for d in shape):
            return f"{path.name}: tensor {name!r} has impossible offsets {[begin, end]} or shape {shape}"
        if dtype in DTYPE_BYTES:
            numel = 1
            for d in shape:
                numel *= d
            if end - begin != numel * DTYPE_BYTES[dtype]:
                return (f"{path.name}: the header lies about tensor {name!r}: {dtype} {shape} needs "
                        f"{numel * DTYPE_BYTES[dtype]:,} bytes, its range holds {end - begin:,}")
        spans.append((begin, end, name))
    spans.sort()
    at = 0
    for begin, end, name in spans:
        if begin != at:
            what = "overlaps the tensor before it" if begin < at else f"leaves a gap of {begin - at:,} bytes"
            return f"{path.name}: the header lies about tensor {name!r}: its range {what}"
        at = end
    if size < 8 + n + at:
        return f"{path.name} is cut short ({size:,} of {8 + n + at:,} bytes)"
    if size > 8 + n + at:
        return f"{path.name} is {size - (8 + n + at):,} bytes longer than its header declares ({8 + n + at:,})"
    return None


def weight_files(folder: str | os.PathLike) -> tuple[list[Path], str | None]:
    """``(safetensors files of the folder, why they are incomplete)``: ``model.safetensors``, the
    shards named by ``model.safetensors.index.json`` (a damaged index or a missing shard is the
    problem), an adapter's ``adapter_model.safetensors``."""
    folder = Path(folder)
    files = [folder / n for n in ("model.safetensors", "adapter_model.safetensors") if (folder / n).is_file()]
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return files, f"model.safetensors.index.json is damaged ({exc})"
        for s in shards:
            if not (folder / s).is_file():
                return files, f"weight shard {s} is missing"
        files += [folder / s for s in shards if folder / s not in files]
    return files, None


def nonfinite_problem(path: str | os.PathLike) -> str | None:
    """Why the weights in safetensors file ``path`` are unusable for training or evaluation: the
    first floating-point tensor holding NaN or infinity, with the count (None when all are
    finite). Reads one tensor at a time (memory-mapped)."""
    import torch
    from safetensors import safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="pt") as fh:
            for name in fh.keys():
                t = fh.get_tensor(name)
                if not t.is_floating_point():
                    continue
                try:
                    bad = int((~torch.isfinite(t)).sum())
                except (RuntimeError, TypeError):  # float8 and other types isfinite does not take
                    continue
                if bad:
                    nan = int(torch.isnan(t).sum())
                    kinds = ", ".join(k for k, c in (("NaN", nan), ("infinity", bad - nan)) if c)
                    return (f"{path.name}: tensor {name!r} holds {bad:,} non-finite value(s) ({kinds}) of "
                            f"{t.numel():,}; a model with non-finite weights trains and scores nothing")
    except Exception as exc:  # noqa: BLE001 - safetensors' own refusal of a malformed file
        return f"{path.name} does not load ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
    return None


def json_problem(folder: str | os.PathLike) -> str | None:
    """The first JSON file of :data:`JSON_FILES` in ``folder`` that does not parse, named."""
    folder = Path(folder)
    for name in JSON_FILES:
        f = folder / name
        if not f.is_file():
            continue
        try:
            json.loads(f.read_bytes().decode("utf-8"))
        except (OSError, ValueError) as exc:
            return f"{name} is not valid JSON ({' '.join(str(exc).split())[:160]}; {f.stat().st_size:,} bytes)"
    return None


def local_model_folder(path: str | os.PathLike) -> Path | None:
    """The folder the loaders read for ``path``: the folder itself, or a cached hub id's
    snapshot folder (None when neither is on this machine)."""
    p = Path(path)
    if p.is_dir():
        return p
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(path), local_files_only=True))
    except Exception:  # noqa: BLE001 - not a hub id, or not in the cache: the loader speaks for it
        return None


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:240]}"


def _remote_code_hint(exc: BaseException, trust_remote_code: bool) -> str:
    text = str(exc)
    if not trust_remote_code and ("trust_remote_code" in text or "custom code" in text):
        return (" - the folder ships its own code, which medrl does not run unless you pass --trust-remote-code "
                "(only for a model you trust)")
    return ""


def _template_file(folder: Path) -> str:
    for name in TEMPLATE_FILES:
        f = folder / name
        if not f.is_file():
            continue
        if name.endswith(".jinja"):
            return name
        try:
            if "chat_template" in json.loads(f.read_text()):
                return name
        except (OSError, ValueError):
            continue
    return "the chat template"


def load_problem(folder: str | os.PathLike, *, trust_remote_code: bool = False) -> str | None:
    """Why the config, tokenizer, processor or chat template of ``folder`` does not load or
    render as a run loads and uses them (None when all do); the failing file is named."""
    import transformers

    from medrl.models.loading import load_processor

    folder = Path(folder)
    try:
        transformers.AutoConfig.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - anything the loader raises is the folder's fault
        return f"config.json does not load ({_short(exc)}){_remote_code_hint(exc, trust_remote_code)}"
    try:
        processor = load_processor(str(folder), trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001
        hint = _remote_code_hint(exc, trust_remote_code)
        try:  # which part: the tokenizer, or the image processor / processor config
            transformers.AutoTokenizer.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
        except Exception as tok_exc:  # noqa: BLE001
            names = [n for n in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                                 "tokenizer.model") if (folder / n).is_file()]
            return (f"the tokenizer ({', '.join(names) or 'no tokenizer file'}) does not load "
                    f"({_short(tok_exc)}){_remote_code_hint(tok_exc, trust_remote_code) or hint}")
        names = [n for n in ("preprocessor_config.json", "processor_config.json") if (folder / n).is_file()]
        return f"the processor ({', '.join(names) or 'no processor config'}) does not load ({_short(exc)}){hint}"
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Is there a fracture?"}]}]
    try:
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # noqa: BLE001 - a template that does not compile or raises
        return f"{_template_file(folder)}: the chat template does not render a prompt ({_short(exc)})"
    if isinstance(prompt, list):
        prompt = prompt[0] if prompt else ""
    if not isinstance(prompt, str) or not prompt.strip():
        return f"{_template_file(folder)}: the chat template renders an empty prompt"
    try:
        from PIL import Image

        processor(text=[prompt], images=[Image.new("RGB", (64, 64), (128, 128, 128))], return_tensors="pt")
    except Exception as exc:  # noqa: BLE001 - settings the image processor cannot work with
        names = [n for n in ("preprocessor_config.json", "processor_config.json") if (folder / n).is_file()]
        return (f"the processor ({', '.join(names) or 'its config'}) cannot turn the rendered prompt and an image "
                f"into model inputs ({_short(exc)})")
    return None


def model_problem(path: str | os.PathLike, *, trust_remote_code: bool = False, finite: bool = True,
                  load: bool = True) -> str | None:
    """Why the model at ``path`` (a folder or a cached hub id) will not train or evaluate, naming
    the file (None when every check passes): JSON files, weights headers, finite weights
    (``finite``), then config, tokenizer, processor and chat template (``load``)."""
    folder = local_model_folder(path)
    if folder is None:
        return None  # nothing on disk to look at: the loader speaks for a hub id it fetches
    why = json_problem(folder)
    if why:
        return why
    files, why = weight_files(folder)
    if why:
        return why
    for f in files:
        why = safetensors_problem(f)
        if why:
            return why
    if finite:
        for f in files:
            why = nonfinite_problem(f)
            if why:
                return why
    if load and ((folder / "config.json").is_file()):
        return load_problem(folder, trust_remote_code=trust_remote_code)
    return None


def check_model(path: str | os.PathLike, *, given: str | None = None, trust_remote_code: bool = False,
                **kw) -> None:
    """Raise :class:`~medrl.common.exit_codes.ModelDamagedError` (exit 5) naming the model and the
    file when :func:`model_problem` finds one."""
    from medrl.common.exit_codes import ModelDamagedError

    why = model_problem(path, trust_remote_code=trust_remote_code, **kw)
    if why is not None:
        where = str(path) if given is None or str(given) == str(path) else f"{given} ({path})"
        raise ModelDamagedError(f"--model {where}: {why}")


__all__ = ["DTYPE_BYTES", "check_model", "json_problem", "load_problem", "local_model_folder", "model_problem",
           "nonfinite_problem", "safetensors_problem", "weight_files"]
