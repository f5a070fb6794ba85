"""VQA-RAD (Lau et al., Sci. Data 2018; https://osf.io/89kps/, CC0).

Two layouts, both under ``<data_dir>/vqa_rad/`` with images in ``VQA_RAD Image Folder/``:

- ``official``: ``VQA_RAD Dataset Public.json`` (2,248 QA). Split by ``phrase_type``:
  freeform/para = train (1,797), test_freeform/test_para = test (451).
- ``mevf``: ``trainset.json`` (3,064, incl. templated "frame" questions) / ``testset.json`` (451),
  the re-split of the MEVF code base.

Normalisation: ``qid`` (the first is the string "0", the rest ints) becomes text; answers that
are ints (``4``) become strings; ``answer_type`` loses its trailing spaces ("CLOSED ").

VQA-RAD has no modality field. :func:`derive_modalities` reads it per image from the dataset's
own MODALITY-type questions on that image and, where there are none, falls back to a heuristic
(see there); ``extras["modality_source"]`` says which rule gave it.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from medrl.data.images import outside_root_problem
from medrl.data.record import DataError, VQARecord, is_open_ended_answer, is_yes_no, normalize_answer_text, normalize_answer_type
from medrl.data.validate import invalid_record
from medrl.common.modality import modality_to_tag

OFFICIAL_FILE = "VQA_RAD Dataset Public.json"
MEVF_FILES = {"train": "trainset.json", "test": "testset.json"}
IMAGE_DIRS = ("VQA_RAD Image Folder", "images", "VQA_RAD_Image_Folder")
TRAIN_PHRASES = {"freeform", "para"}
TEST_PHRASES = {"test_freeform", "test_para"}
ORGANS = {"HEAD": "Head", "CHEST": "Chest", "ABD": "Abdomen"}

# raw modality name -> pattern over lower-cased text (project's keyword list)
_MODALITY_PATTERNS: dict[str, re.Pattern] = {
    "CT": re.compile(r"\bct\b|\bcta\b|computed tomograph|\bcat scan"),
    "MRI": re.compile(r"\bmri?\b|magnetic resonance|\bt[12]\b|\bt[12][- ]weighted|\bflair\b|diffusion[- ]weighted|\bdwi\b|\badc\b"),
    "X-Ray": re.compile(r"\bx[- ]?rays?\b|radiograph|\bcxr\b|plain film"),
    "Ultrasound": re.compile(r"ultrasound|sonogra"),
    "Angiography": re.compile(r"angiogra"),
    "Fluoroscopy": re.compile(r"fluoroscop|barium (swallow|enema)|\bupper gi\b"),
    "Mammography": re.compile(r"mammogra"),
    "PET": re.compile(r"\bpet\b"),
}
_NEGATED = re.compile(r"\bnot\b|n't\b")
# heuristic fallback by organ when no text on the image names a modality (see derive_modalities)
ORGAN_DEFAULT_MODALITY = {"CHEST": "X-Ray", "HEAD": "MRI", "ABD": "CT"}


def modality_mentions(text: str) -> set[str]:
    """Raw modality names mentioned in ``text`` (keyword match; CT angiography counts as CT)."""
    t = str(text).lower()
    found = {name for name, pat in _MODALITY_PATTERNS.items() if pat.search(t)}
    if "CT" in found:
        found.discard("Angiography")
    return found


def _single(found: set[str]) -> str | None:
    return next(iter(found)) if len(found) == 1 else None


def derive_modalities(rows: list[dict]) -> dict[str, tuple[str, str]]:
    """Per image name: (raw modality, source), from all QA rows about that image.

    1. ``modality_question``: the dataset's MODALITY-type questions on the image. A free-text
       answer naming exactly one modality ("Chest X-ray", "T2-MRI") is a vote; so is a "yes" to a
       question naming exactly one ("Is this a CT image?"). Negated questions ("What type of
       imaging does this not represent?") and "no" answers give no vote. Majority wins.
    2. ``qa_text_heuristic`` (a heuristic): the same vote over every other question/answer on the
       image that names exactly one modality ("... on this CT?"), skipping negated questions and
       "no" answers.
    3. ``organ_default_heuristic`` (a heuristic): by ``image_organ`` - CHEST -> X-Ray, HEAD -> MRI,
       ABD -> CT - the most common modality of each organ among images resolved by rule 1.
    """
    by_image: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if isinstance(r.get("image_name"), str):  # a malformed record is reported by the loader
            by_image[r["image_name"]].append(r)
    out: dict[str, tuple[str, str]] = {}
    for name, qs in by_image.items():
        for source, pool in (
            ("modality_question", [r for r in qs if "MODALITY" in str(r.get("question_type", "")).upper()]),
            ("qa_text_heuristic", [r for r in qs if "MODALITY" not in str(r.get("question_type", "")).upper()]),
        ):
            votes: Counter = Counter()
            for r in pool:
                q = str(r.get("question", ""))
                if _NEGATED.search(q.lower()):
                    continue
                try:
                    ans = normalize_answer_text(r.get("answer"))
                except DataError:
                    continue
                if is_yes_no(ans):
                    if ans.strip().lower().startswith("yes"):
                        m = _single(modality_mentions(q))
                        if m:
                            votes[m] += 1
                    continue
                m = _single(modality_mentions(ans))
                if m is None and source == "qa_text_heuristic":
                    m = _single(modality_mentions(q))
                if m:
                    votes[m] += 1
            if votes:
                (best, n), *rest = votes.most_common()
                if not rest or rest[0][1] < n:
                    out[name] = (best, source)
                    break
        else:
            organ = str(qs[0].get("image_organ", "")).strip().upper()
            if organ in ORGAN_DEFAULT_MODALITY:
                out[name] = (ORGAN_DEFAULT_MODALITY[organ], "organ_default_heuristic")
    return out


def find_root(data_dir: Path) -> Path:
    """``<data_dir>/vqa_rad`` or ``data_dir`` itself when it holds the json files."""
    for c in (data_dir / "vqa_rad", data_dir / "VQA_RAD", data_dir):
        if (c / OFFICIAL_FILE).is_file() or (c / MEVF_FILES["train"]).is_file():
            return c
    raise DataError(
        f"VQA-RAD not found under {data_dir}: expected {data_dir / 'vqa_rad' / OFFICIAL_FILE} "
        f"(or trainset.json/testset.json). Get it from https://osf.io/89kps/ - see docs/data.md."
    )


def _image_dir(root: Path) -> Path:
    for d in IMAGE_DIRS:
        if (root / d).is_dir():
            return root / d
    raise DataError(f"VQA-RAD image folder not found in {root} (expected one of {list(IMAGE_DIRS)})")


def _split_of(phrase_type: str) -> str | None:
    p = str(phrase_type).strip().lower()
    if p in TEST_PHRASES:
        return "test"
    if p in TRAIN_PHRASES:
        return "train"
    return None


def load_vqa_rad(data_dir: Path, split: str | None = None, *, layout: str = "official") -> list[VQARecord]:
    """Records of VQA-RAD (``split`` "train"/"test"/None for both) in ``layout`` official|mevf."""
    root = find_root(Path(data_dir))
    img_dir = _image_dir(root).resolve()
    if split not in (None, "train", "test"):
        raise DataError(f"VQA-RAD has splits 'train' and 'test', not {split!r}")
    if layout == "official":
        path = root / OFFICIAL_FILE
        rows = _read_json_list(path)
        tagged = [(r, _split_of(r.get("phrase_type", "")), path, i) for i, r in enumerate(rows)]
        for r, s, _, i in tagged:
            if s is None:
                raise DataError(f"{path}: record #{i} (qid {r.get('qid')!r}) has unknown phrase_type {r.get('phrase_type')!r}")
        all_rows = rows
        prefix = "vqa_rad"
    elif layout == "mevf":
        tagged = []
        for s, fname in MEVF_FILES.items():
            if split in (None, s):
                path = root / fname
                tagged += [(r, s, path, i) for i, r in enumerate(_read_json_list(path))]
        all_rows = [r for r, *_ in tagged]
        prefix = "vqa_rad_mevf"
    else:
        raise DataError(f"unknown VQA-RAD layout {layout!r}; use 'official' or 'mevf'")
    modalities = derive_modalities(all_rows)
    source = "vqa_rad" if layout == "official" else "vqa_rad_mevf"
    out = []
    for r, s, path, i in tagged:
        if split is not None and s != split:
            continue
        problems = record_field_problems(r, path, i)
        if problems:  # reported by validation naming file and record; skippable with skip_invalid
            qid = str(r["qid"]).strip() if isinstance(r.get("qid"), (str, int)) else f"record{i}"
            out.append(invalid_record(f"{prefix}-{qid}", problems, split=s, source=source))
            continue
        answer = normalize_answer_text(r["answer"])
        image = img_dir / r["image_name"]
        why = outside_root_problem(image, [root])
        if why:
            out.append(invalid_record(f"{prefix}-{str(r['qid']).strip()}", [f"{path.name} record #{i} (qid {r['qid']!r}): {why}"],
                                      split=s, source=source))
            continue
        raw_mod, mod_src = modalities.get(r["image_name"], (None, None))
        organ_code = str(r.get("image_organ", "")).strip().upper()
        extras = {k: r[k] for k in ("phrase_type", "qid_linked_id", "image_case_url", "question_rephrase",
                                     "question_frame", "evaluation") if k in r and r[k] not in (None, "NULL")}
        extras.update(lang="en", qid=str(r["qid"]), image_name=r["image_name"], image_organ=organ_code or None,
                      modality_source=mod_src)
        out.append(VQARecord(
            id=f"{prefix}-{str(r['qid']).strip()}",
            images=[str(image)],
            question=str(r["question"]).strip(),
            answer=answer,
            answer_type=normalize_answer_type(r.get("answer_type")),
            open_ended=is_open_ended_answer(answer),
            modality=raw_mod,
            modality_tag=modality_to_tag(raw_mod),
            organ=ORGANS.get(organ_code, organ_code.title() or None),
            question_type=(str(r.get("question_type")).strip().upper() or None) if r.get("question_type") else None,
            split=s,
            source=source,
            extras=extras,
        ))
    return out


def record_field_problems(r: dict, path: Path, index: int) -> list[str]:
    """What is malformed in VQA-RAD record #``index`` of ``path`` (empty when nothing): a missing
    field, an ``image_name`` that is not one file name, a question that is not text, an answer
    that is an object or a list. Each message names the file, the record and the field."""
    where = f"{path.name} record #{index}" + (f" (qid {r.get('qid')!r})" if "qid" in r else "")
    problems = [f"{where}: field {key!r} missing" for key in ("qid", "image_name", "question", "answer") if key not in r]
    name = r.get("image_name")
    if "image_name" in r and not (isinstance(name, str) and name.strip()):
        problems.append(f"{where}: field 'image_name' must be one image file name, got {type(name).__name__} {name!r}")
    if "question" in r and not isinstance(r["question"], str):
        problems.append(f"{where}: field 'question' must be text, got {type(r['question']).__name__}")
    if "answer" in r:
        try:
            normalize_answer_text(r["answer"], where)
        except DataError as exc:
            problems.append(str(exc))
    return problems


def _read_json_list(path: Path) -> list[dict]:
    if not path.is_file():
        raise DataError(f"VQA-RAD file missing: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of QA records")
    for i, r in enumerate(data):
        if not isinstance(r, dict):
            raise DataError(f"{path}: record #{i} is not an object")
    return data
