"""``medrl push``: upload a trained model with its model card to the Hugging Face Hub."""

from __future__ import annotations

HELP = "upload a run's model (final/, with its Hub-ready model card) to the Hugging Face Hub"

DESCRIPTION = """\
Upload the model of a run folder (its final/, or the last finished stage of a multi-stage run) or
a model folder to a Hugging Face Hub model repository, with huggingface_hub's upload API
(HfApi.create_repo + upload_folder). The folder's README.md is the model card medrl wrote after
training: base_model (a hub id, never a local path), datasets, the paper's arXiv tag, the run's
key metrics and the `medrl train` command that reproduces it.

Before anything is sent, the model is checked as `medrl eval` checks it (weights against their
headers, finite weights, tokenizer, processor, chat template: exit 5 naming the file) and the
card is checked for a local path (this machine's home, working or temporary folder). --dry-run
lists the files and stops.

The token: $HF_TOKEN (or the variable --token-env names), else the login of `hf auth login`.
The endpoint: --endpoint, else $HF_ENDPOINT, else huggingface.co. Pushing needs the network:
with HF_HUB_OFFLINE=1 set it is refused in one line.

Examples:
  medrl push runs/mrpo --repo me/qwen2.5-vl-3b-mrpo --dry-run
  medrl push runs/mrpo --repo me/qwen2.5-vl-3b-mrpo --private
  HF_TOKEN=hf_... medrl push runs/armed --repo my-org/armed-7b --message "ARMed, 3 stages"
"""

#: files of a model folder never uploaded (medrl's lock files, editor and OS leftovers)
IGNORE = [".medrl*", "*.lock", ".DS_Store", "__pycache__/*", "*.pyc"]


def add_arguments(p) -> None:
    p.add_argument("run", help="a run folder (its final/ or last finished stage) or a model folder")
    p.add_argument("--repo", required=True, metavar="ID", help="Hub model repository, e.g. me/qwen2.5-vl-3b-mrpo")
    p.add_argument("--private", action="store_true", help="create the repository private (when it is new)")
    p.add_argument("--revision", default=None, help="branch to commit to (default: main)")
    p.add_argument("--message", default=None, help="commit message (default: 'Upload a policy trained with medrl')")
    p.add_argument("--endpoint", default=None, metavar="URL",
                   help="Hub endpoint (default: $HF_ENDPOINT, else https://huggingface.co)")
    p.add_argument("--token-env", default="HF_TOKEN", metavar="VAR",
                   help="environment variable holding the Hub token (default HF_TOKEN; else the cached login)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="load the model's own code while checking it (only for a model you trust)")
    p.add_argument("--dry-run", action="store_true", help="check the model and its card, list the files, upload nothing")


def card_problem(folder, run=None) -> str | None:
    """Why ``folder``'s model card is not ready to publish: none, no front matter, or a local path
    (this machine's home, working or temporary folder, or the run's own path) in it."""
    import os
    import tempfile
    from pathlib import Path

    card = Path(folder) / "README.md"
    if not card.is_file():
        return f"{card} is missing: medrl writes the model card when training finishes (train again, or add one)"
    text = card.read_text(errors="replace")
    if not text.startswith("---"):
        return f"{card} has no front matter (base_model, datasets, tags): it is not a model card medrl wrote"
    roots = {str(Path.home()), os.getcwd(), tempfile.gettempdir(), str(Path(folder).resolve())}
    if run is not None:
        roots.add(str(Path(run).resolve()))
    for root in sorted(roots, key=len, reverse=True):
        if len(root) > 1 and root in text:
            return f"{card} names a local path ({root}); remove it before publishing"
    return None


def run(args) -> int:
    import os
    import sys
    from pathlib import Path

    from medrl.common.exit_codes import Exit
    from medrl.models.integrity import check_model
    from medrl.models.loading import resolve_model_path

    folder = Path(resolve_model_path(args.run))
    if not folder.is_dir():
        print(f"medrl push: {args.run} is not a model folder or run folder on this machine", file=sys.stderr)
        return int(Exit.MODEL)
    check_model(folder, given=args.run, trust_remote_code=bool(args.trust_remote_code))  # exit 5 naming the file
    why = card_problem(folder, args.run)
    if why:
        print(f"medrl push: {why}", file=sys.stderr)
        return int(Exit.USAGE)
    import fnmatch

    files = sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file() and not any(
        fnmatch.fnmatch(str(f.relative_to(folder)), pat) or fnmatch.fnmatch(f.name, pat) for pat in IGNORE))
    size = sum((folder / f).stat().st_size for f in files)
    print(f"{folder}: {len(files)} files, {size / 1e6:.1f} MB -> {args.repo}")
    if args.dry_run:
        print("\n".join(f"  {f}" for f in files))
        print("dry run: nothing uploaded")
        return int(Exit.OK)
    import huggingface_hub
    from huggingface_hub import HfApi

    if huggingface_hub.constants.HF_HUB_OFFLINE:
        print("medrl push: HF_HUB_OFFLINE is set (or the hub could not be reached at start): pushing needs the "
              "network; unset HF_HUB_OFFLINE and rerun", file=sys.stderr)
        return int(Exit.USAGE)
    token = os.environ.get(args.token_env) or None
    api = HfApi(endpoint=args.endpoint or None, token=token)
    try:
        api.create_repo(args.repo, repo_type="model", private=bool(args.private), exist_ok=True)
        info = api.upload_folder(folder_path=str(folder), repo_id=args.repo, repo_type="model",
                                 revision=args.revision, ignore_patterns=IGNORE,
                                 commit_message=args.message or "Upload a policy trained with medrl")
    except Exception as exc:  # noqa: BLE001 - HTTP errors, a refused token, a bad repo id: one line
        msg = " ".join(str(exc).split())[:300]
        print(f"medrl push: the Hub refused the upload to {args.repo}: {type(exc).__name__}: {msg}", file=sys.stderr)
        return int(Exit.FAILED)
    url = getattr(info, "commit_url", None) or getattr(info, "repo_url", None) or args.repo
    print(f"pushed {len(files)} files to {args.repo} ({url})")
    return int(Exit.OK)
