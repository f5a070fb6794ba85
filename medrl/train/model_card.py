"""The model card a medrl run writes next to its model, ready for the Hugging Face Hub.

TRL's card names the base model only when it is a hub id, so a policy trained from a local folder
(every warm-up -> RL chain, every tiny model) reads "a fine-tuned version of None". medrl writes
its own ``README.md`` in the run folder and in ``final/`` instead, after training:

- front matter (``huggingface_hub.ModelCardData``): ``base_model`` (a hub id when the run started
  from one, or from a local fine-tune of one; never a local path), ``datasets`` (hub ids of the
  training sources where medrl knows them, else their names), ``library_name``,
  ``pipeline_tag``, and ``tags`` (medrl, trl, the recipe, ``arxiv:<id>`` of its paper);
- the body: the method and paper, the run's key metrics (from ``metrics.jsonl``) and the
  ``medrl train`` (or ``medrl sft``) command that reproduces it.

No local path appears anywhere: a local starting model is described, a ``jsonl:`` file is named
by its file name only, and the command's ``--out`` is the run folder's name. ``medrl push`` uploads
the folder with its card (:mod:`medrl.commands.push`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}")
_SHORTHANDS = ("tiny", "default")


def _is_hub_id(name: str) -> bool:
    return bool(_HUB_ID.fullmatch(name)) and ".." not in name and not Path(name).expanduser().exists()


def _front_matter_base(folder: Path) -> str | None:
    """``base_model`` of the card in ``folder`` (a previous stage or run), when it has one."""
    card = folder / "README.md"
    if not card.is_file():
        return None
    try:
        from huggingface_hub import ModelCard

        base = ModelCard.load(card).data.to_dict().get("base_model")
    except Exception:  # noqa: BLE001 - a card of another tool, or no front matter
        return None
    base = base[0] if isinstance(base, list) and base else base
    return base if isinstance(base, str) and _is_hub_id(base) else None


def base_model_info(model: str | os.PathLike) -> tuple[str | None, str]:
    """``(hub id or None, how the card names the starting model)``, never with a local path: a
    hub id as given; ``tiny`` / ``default`` by name; a local folder (a model folder, a run folder,
    a previous stage's ``final/``) by the hub id it was itself trained from when its card or its
    ``config.json`` records one."""
    name = str(model)
    if name in _SHORTHANDS or name.startswith("tiny-"):
        return None, f"medrl's offline `{name}` model (`medrl build-model {name}`)"
    p = Path(name).expanduser()
    if not p.exists():
        return (name, f"`{name}`") if _is_hub_id(name) else (None, "a model")
    folders = [p, p / "final", p.parent]
    for f in folders:
        base = _front_matter_base(f) if f.is_dir() else None
        if base:
            return base, f"a local fine-tune of `{base}`"
    cfg = p / "config.json"
    if cfg.is_file():
        try:
            origin = json.loads(cfg.read_text()).get("_name_or_path") or ""
        except (OSError, ValueError, AttributeError):
            origin = ""
        if isinstance(origin, str) and _is_hub_id(origin):
            return origin, f"a local fine-tune of `{origin}`"
    return None, "a local model folder"


def base_model_name(model: str | os.PathLike) -> str:
    """A readable name for the starting model, without a local path (:func:`base_model_info`)."""
    return base_model_info(model)[1]


def hub_dataset_id(name: str) -> str | None:
    """The Hugging Face dataset id of a named data source, when medrl's source table gives one
    (its own URL, or that of its ``<name>_hf`` copy)."""
    from medrl.data.registry import SOURCES

    for key in (name, f"{name}_hf"):
        src = SOURCES.get(key)
        m = re.search(r"huggingface\.co/datasets/([\w.-]+/[\w.-]+)", getattr(src, "url", "") or "")
        if m:
            return m.group(1)
    return None


def dataset_names(data: str | None) -> list[str]:
    """``datasets`` of the card for a training source spec (``vqa_rad:train``, ``pathvqa+slake``,
    ``jsonl:/x/y.jsonl``, ``hf:owner/name``): hub ids where known, else the source's name; a local
    file or folder by its name only."""
    from medrl.data.registry import parse_source

    out = []
    for part in str(data or "").split("+"):
        part = part.strip()
        if not part:
            continue
        try:
            name, _, _ = parse_source(part)
        except Exception:  # noqa: BLE001
            name = part
        if part.startswith(("jsonl:", "hf:")):
            path = part.split(":", 1)[1]
            if part.startswith("hf:") and _is_hub_id(path):
                out.append(path)
            else:
                out.append(Path(path.rstrip("/")).stem or "local-data")
            continue
        out.append(hub_dataset_id(name) or name)
    return list(dict.fromkeys(out))


#: metrics.jsonl keys the card reports (the last value logged), in this order
CARD_METRICS = ("reward", "reward_std", "answer_reward", "process_reward", "kl", "completions/mean_length",
                "monitor/probe_accuracy", "loss", "train_loss", "mean_token_accuracy", "train_runtime")


def key_metrics(run_dir: str | os.PathLike) -> dict[str, float]:
    """The last logged value of each of :data:`CARD_METRICS` (and of each ``rewards/<name>/mean``)
    in ``run_dir/metrics.jsonl``."""
    path = Path(run_dir) / "metrics.jsonl"
    found: dict[str, float] = {}
    if not path.is_file():
        return found
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        for k, v in row.items():
            if (k in CARD_METRICS or (k.startswith("rewards/") and k.endswith("/mean"))) and \
                    isinstance(v, (int, float)) and not isinstance(v, bool):
                found[k] = float(v)
    order = {k: i for i, k in enumerate(CARD_METRICS)}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _no_path(value: str) -> str:
    """``value`` with a local path replaced by its file name (``--set data.rationales=/x/r.json``
    -> ``r.json``; ``./my_rewards.py:fn`` -> ``my_rewards.py:fn``)."""
    def swap(m: re.Match) -> str:
        return Path(m.group(0)).name

    return re.sub(r"(?:~|\.{1,2})?/[^\s=:,'\"\]\[]+", swap, value)


def reproduce_command(recipe: str, model: str | os.PathLike, data: str | None = None, *, command: str = "train",
                      profile: str | None = None, overrides=(), rewards=(), limit: int | None = None,
                      lora: bool = False, judge: str | None = None, trust_remote_code: bool = False,
                      out: str | os.PathLike = "RUN") -> str:
    """The ``medrl train`` (or ``medrl sft``) command line that trains this model again, with no
    local path: a local starting model is ``BASE_MODEL`` (its hub id when known), local files are
    named by their file name, ``--out`` is the run folder's name."""
    hub, _ = base_model_info(model)
    name = str(model)
    start = name if (name in _SHORTHANDS or name.startswith("tiny-") or _is_hub_id(name)) else (hub or "BASE_MODEL")
    parts = ["medrl", command, "--recipe", _no_path(str(recipe)), "--model", start]
    if data:
        parts += ["--data", ":".join([data.split(":", 1)[0], _no_path(data.split(":", 1)[1])])
                  if data.startswith(("jsonl:", "hf:")) and not _is_hub_id(data.split(":", 1)[1]) else data]
    if profile:
        parts += ["--profile", profile]
    for o in overrides or ():
        parts += ["--set", _no_path(str(o))]
    for r in rewards or ():
        parts += ["--reward", _no_path(str(r))]
    if limit:
        parts += ["--limit", str(limit)]
    if lora:
        parts.append("--lora")
    if judge and command == "train":
        parts += ["--judge", str(judge)]
    if trust_remote_code:
        parts.append("--trust-remote-code")
    parts += ["--out", Path(str(out)).name or "RUN"]
    return " ".join(shlex.quote(p) for p in parts)


def _paper_tags(paper: str) -> list[str]:
    return [f"arxiv:{m}" for m in dict.fromkeys(re.findall(r"arXiv[:\s]+(\d{4}\.\d{4,5})", paper or ""))]


def model_card(*, base_model: str | os.PathLike, method: str, recipe: str = "", paper: str = "",
               data: str = "", datasets=(), steps: int | None = None, extra: dict | None = None,
               metrics: dict | None = None, command: str | None = None) -> str:
    """Markdown text of the card: front matter (``base_model``, ``datasets``, tags with the
    paper's arXiv id, library and pipeline), then the method, the key metrics and the command
    that reproduces the run. ``base_model`` is what the run started from (a hub id, a shorthand
    or a local folder: :func:`base_model_info` keeps local paths out)."""
    from huggingface_hub import ModelCard, ModelCardData

    import medrl

    hub_id, described = base_model_info(base_model)
    tag = re.sub(r"[^a-z0-9_-]+", "-", (recipe or method).lower()).strip("-")
    card_data = ModelCardData(
        base_model=hub_id, datasets=list(datasets) or None, library_name="transformers",
        pipeline_tag="image-text-to-text",
        tags=list(dict.fromkeys(["medrl", "trl", "medical", "vision-language", *([tag] if tag else []),
                                 *_paper_tags(paper)])))
    lines = [f"# {recipe or method} policy", "",
             f"This model is a fine-tuned version of {described}, trained with **{method}** using "
             f"medrl {medrl.__version__} on TRL."]
    if paper:
        lines += ["", f"Method: {paper}."]
    facts = {"recipe": recipe, "training data": data, "datasets": ", ".join(datasets), "optimizer steps": steps,
             **(extra or {})}
    rows = [f"- {k}: {v}" for k, v in facts.items() if v not in (None, "")]
    if rows:
        lines += ["", "## Training", "", *rows]
    if metrics:
        lines += ["", "## Results (last logged values of the run)", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4g} |" for k, v in metrics.items()]
    if command:
        lines += ["", "## Reproduce", "", "```bash", command, "```"]
    lines += ["", "The full resolved settings are in the run folder's `config.yaml` (RL) or "
              "`sft_config.yaml` (SFT)."]
    text = ModelCard.from_template(card_data, template_str="---\n{{ card_data }}\n---\n\n" + "\n".join(lines) + "\n")
    return _strip_local_paths(str(text))


def _strip_local_paths(text: str) -> str:
    """A last guard: the card never carries this machine's home, working folder or temp folder."""
    import tempfile

    for root in {str(Path.home()), os.getcwd(), tempfile.gettempdir(), str(Path(tempfile.gettempdir()).resolve())}:
        if len(root) > 1:
            text = text.replace(root.rstrip("/") + "/", "").replace(root, ".")
    return text


def write_model_card(folders, **kw) -> None:
    """Write :func:`model_card` as ``README.md`` into each existing folder of ``folders``."""
    text = model_card(**kw)
    for f in folders:
        f = Path(f)
        if f.is_dir():
            (f / "README.md").write_text(text)
