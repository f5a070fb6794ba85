"""Image safety: full decoding at validation, a pixel cap before the processor, the data root.

Three rules keep a bad image file from hurting a run (docs/data.md "Data safety"):

- **Fully decoded at validation.** :func:`check_images` decodes every image (``Image.load()``,
  not only the header) in a small thread pool, so a truncated JPEG or PNG is a per-record error
  at load time - skippable with ``--skip-invalid`` - instead of a traceback at generation. An
  image over Pillow's decompression-bomb limit (``2 * Image.MAX_IMAGE_PIXELS``, 179 M pixels:
  a 20000x20000 PNG is 390 KB on disk and 1.2 GB decoded) is refused the same way. Results are
  cached by the file's SHA-256 digest (``<medrl cache>/image_checks.json``), so a rerun reads
  each file once and decodes nothing.
- **Pixel cap.** :func:`open_image` downscales an image larger than ``max_pixels`` (default
  :data:`DEFAULT_MAX_PIXELS`, or ``$MEDRL_MAX_PIXELS``; a recipe's ``data.max_pixels``) before it
  reaches a processor, keeping its aspect ratio; a JPEG is decoded at reduced scale
  (``Image.draft``) so the full-size pixels never exist in memory.
- **Data root.** An image path that resolves (``..``, symlinks) outside the folders a source may
  read - its dataset folder, a JSONL file's folder, the configured data folder - is a per-record
  error, unless allowed (``--allow-outside-data-root``, :func:`allow_outside_data_root`). Such a
  file is therefore never decoded, trained on or sent to a judge with ``--judge-images``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Iterator

#: Default pixel cap (width x height) of an image given to a processor: 2**25 = 33.5 M pixels
#: (a 5792x5792 image), far above any medical VQA image and far below Pillow's bomb limit.
DEFAULT_MAX_PIXELS = 2**25
#: Environment variables: the pixel cap, and "1" to allow image paths outside the data root.
MAX_PIXELS_ENV = "MEDRL_MAX_PIXELS"
OUTSIDE_ROOT_ENV = "MEDRL_ALLOW_OUTSIDE_DATA_ROOT"
#: Threads decoding images at validation (decoding releases the GIL).
DECODE_THREADS = min(4, os.cpu_count() or 1)

_CACHE_NAME = "image_checks.json"
_CACHE_LOCK = threading.Lock()
_CACHE: dict[str, dict] | None = None
_CACHE_PATH: Path | None = None


def default_max_pixels() -> int:
    """``$MEDRL_MAX_PIXELS`` when set (a positive integer), else :data:`DEFAULT_MAX_PIXELS`."""
    raw = os.environ.get(MAX_PIXELS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_PIXELS
    try:
        value = int(float(raw))
    except ValueError:
        raise ValueError(f"{MAX_PIXELS_ENV}={raw!r} is not a number of pixels") from None
    if value < 1:
        raise ValueError(f"{MAX_PIXELS_ENV} must be a positive number of pixels, got {raw!r}")
    return value


def bomb_limit() -> int:
    """Pixels above which Pillow refuses an image as a decompression bomb."""
    from PIL import Image

    return 2 * int(Image.MAX_IMAGE_PIXELS) if Image.MAX_IMAGE_PIXELS else 0


# --------------------------------------------------------------------------- data root
def outside_root_allowed() -> bool:
    """Whether image paths outside the data root are allowed (``$MEDRL_ALLOW_OUTSIDE_DATA_ROOT``)."""
    return os.environ.get(OUTSIDE_ROOT_ENV, "").strip().lower() in ("1", "true", "yes")


@contextlib.contextmanager
def allow_outside_data_root(allow: bool = True) -> Iterator[None]:
    """Within the block, image paths outside the data root are (not) allowed; restored after.
    Set through the environment so training workers started from here inherit it."""
    old = os.environ.get(OUTSIDE_ROOT_ENV)
    os.environ[OUTSIDE_ROOT_ENV] = "1" if allow else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(OUTSIDE_ROOT_ENV, None)
        else:
            os.environ[OUTSIDE_ROOT_ENV] = old


def configured_data_roots() -> list[Path]:
    """Every existing data folder medrl looks in (``$MEDRL_DATA_DIR``, ``./data``,
    ``../shared/data``): a JSONL file may name images in any of them."""
    from medrl.common import paths

    if hasattr(paths, "data_roots"):
        return list(paths.data_roots())
    try:
        return [Path(paths.data_root())]
    except (FileNotFoundError, OSError):
        return []


def outside_root_problem(path: str | os.PathLike, roots: Iterable[str | os.PathLike | None]) -> str | None:
    """Why ``path`` may not be read (it resolves outside every folder of ``roots``), or None.

    Resolution follows ``..`` and symbolic links, so neither can climb out. None also when
    :func:`outside_root_allowed`.
    """
    if outside_root_allowed():
        return None
    real = Path(os.path.realpath(path))
    allowed = [Path(os.path.realpath(r)) for r in roots if r]
    if any(real == r or real.is_relative_to(r) for r in allowed):
        return None
    where = ", ".join(str(r) for r in allowed) or "no data folder"
    return (f"image path {path} resolves to {real}, outside the data root ({where}); "
            "pass --allow-outside-data-root to allow it")


# --------------------------------------------------------------------------- decoding check
def _cache_file() -> Path:
    from medrl.common.paths import cache_dir

    return cache_dir() / _CACHE_NAME


def _cache() -> dict[str, dict]:
    global _CACHE, _CACHE_PATH
    path = _cache_file()
    with _CACHE_LOCK:
        if _CACHE is None or _CACHE_PATH != path:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                _CACHE = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                _CACHE = {}
            _CACHE_PATH = path
        return _CACHE


def _save_cache() -> None:
    """Write the cache (atomically: a temporary file renamed); a failure only costs a re-decode."""
    with _CACHE_LOCK:
        if _CACHE is None or _CACHE_PATH is None:
            return
        tmp = _CACHE_PATH.with_name(f"{_CACHE_PATH.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(_CACHE, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, _CACHE_PATH)
        except OSError:
            tmp.unlink(missing_ok=True)


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _cache_key(digest: str) -> str:
    from PIL import __version__ as pil_version

    return f"{digest}:pillow{pil_version}:{bomb_limit()}"


def decode_problem(path: str | os.PathLike) -> str | None:
    """Decode the whole image (uncached): None when it decodes, else why not (without the path).

    A truncated file, a corrupt stream, an unknown format and an image over Pillow's
    decompression-bomb limit are problems. A JPEG larger than :data:`DEFAULT_MAX_PIXELS` is
    decoded at reduced scale (every byte is still read, so truncation is still found).
    """
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # under the limit: downscaled later
            with Image.open(path) as im:
                w, h = im.size
                if w * h > DEFAULT_MAX_PIXELS and im.format == "JPEG":
                    im.draft(im.mode, (max(1, w // 8), max(1, h // 8)))
                im.load()
    except Image.DecompressionBombError as exc:
        return f"decompression bomb refused ({exc})"
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        return f"image does not decode ({type(exc).__name__}: {exc})"
    return None


def _check_one(path: str) -> str | None:
    """Why the image file at ``path`` is unusable (the message names the path), or None."""
    try:
        if not os.path.isfile(path):
            return f"missing image {path}" if not os.path.exists(path) else f"image path {path} is not a file"
        digest = file_digest(path)
    except OSError as exc:
        return f"unreadable image {path} ({type(exc).__name__}: {exc})"
    key = _cache_key(digest)
    cached = _cache().get(key)
    if cached is None:
        why = decode_problem(path)
        with _CACHE_LOCK:
            if _CACHE is not None:
                _CACHE[key] = {"problem": why}
        cached = {"problem": why}
    why = cached.get("problem")
    return f"unreadable image {path}: {why}" if why else None


def check_images(paths: Iterable[str], *, threads: int | None = None) -> dict[str, str | None]:
    """Fully decode each distinct image of ``paths`` (in parallel, cached by file digest);
    ``{path: problem or None}``."""
    unique = list(dict.fromkeys(str(p) for p in paths))
    if not unique:
        return {}
    n = max(1, threads or DECODE_THREADS)
    if n == 1 or len(unique) == 1:
        results = [_check_one(p) for p in unique]
    else:
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="medrl-image-check") as pool:
            results = list(pool.map(_check_one, unique))
    _save_cache()
    return dict(zip(unique, results))


# --------------------------------------------------------------------------- opening under the cap
def capped_size(size: tuple[int, int], max_pixels: int) -> tuple[int, int]:
    """``size`` scaled down (aspect ratio kept) so that width x height <= ``max_pixels``."""
    w, h = size
    if w * h <= max_pixels:
        return w, h
    scale = math.sqrt(max_pixels / (w * h))
    nw, nh = max(1, int(w * scale)), max(1, int(h * scale))
    while nw * nh > max_pixels:  # rounding
        if nw >= nh:
            nw -= 1
        else:
            nh -= 1
    return nw, nh


def open_image(path: str | os.PathLike, max_pixels: int | None = None):
    """The image at ``path`` as an RGB PIL image of at most ``max_pixels`` pixels (default
    :func:`default_max_pixels`), downscaled before anything else sees it. A JPEG is decoded at
    reduced scale first; an image over Pillow's decompression-bomb limit raises
    ``PIL.Image.DecompressionBombError`` (validation refuses such files before this point)."""
    import warnings

    from PIL import Image

    cap = int(max_pixels or default_max_pixels())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # downscaled right here
        with Image.open(path) as im:
            target = capped_size(im.size, cap)
            if target != im.size and im.format == "JPEG":
                im.draft("RGB", target)  # DCT scaling: at least ``target``, never the full size
            im.load()
            out = im
            if out.size != capped_size(out.size, cap):  # resize in the file's own mode: a grey scan
                if out.mode not in ("RGB", "L", "RGBA", "I", "F"):  # stays 1 byte a pixel until small
                    out = out.convert("RGB")
                out = out.resize(capped_size(out.size, cap), Image.Resampling.BICUBIC, reducing_gap=2.0)
            out = out if out.mode == "RGB" else out.convert("RGB")
            return out.copy() if out is im else out


def capped_image_path(path: str | os.PathLike, max_pixels: int | None = None) -> str:
    """``path`` itself when the image has at most ``max_pixels`` pixels (default
    :func:`default_max_pixels`; only the header is read), else a downscaled copy written once
    under ``<medrl cache>/capped_images/`` (named by the file's digest and the cap). For datasets
    whose images are decoded by someone else (TRL reads the ``image`` column of
    :func:`medrl.data.hf.to_hf_dataset`), so that no full-size giant reaches the processor."""
    from medrl.common.paths import cache_dir

    cap = int(max_pixels or default_max_pixels())
    try:
        st = os.stat(path)
    except OSError:
        return str(path)  # validation reports missing files
    return _capped_image_path(str(path), cap, st.st_mtime_ns, st.st_size, str(cache_dir() / "capped_images"))


@functools.lru_cache(maxsize=65536)
def _capped_image_path(path: str, cap: int, mtime_ns: int, size: int, folder: str) -> str:
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                width, height = im.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return path  # validation reports unreadable files; nothing to cap
    if width * height <= cap:
        return path
    out = Path(folder) / f"{file_digest(path)[:24]}-{cap}.png"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.{os.getpid()}.{threading.get_ident()}.tmp.png")
        open_image(path, cap).save(tmp, format="PNG")
        os.replace(tmp, out)
    return str(out)
