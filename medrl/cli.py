"""``medrl`` command line. Each subcommand lives in ``medrl/commands/<name>.py`` and exposes
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``. Only the chosen
subcommand's module is imported, so ``medrl --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

# name -> module under medrl.commands (kept in the order shown by --help)
COMMANDS: dict[str, str] = {
    "demo": "demo",
    "data": "data",
    "serve-judge": "serve_judge",
    "build-model": "build_model",
    "sft": "sft",
    "train": "train",
    "eval": "eval",
    "analyze": "analyze",
    "judge-bench": "judge_bench",
    "audit-rewards": "audit_rewards",
}

EPILOG = """\
Typical workflow:
  medrl data inspect --dataset vqa_rad              # look at the data
  medrl audit-rewards --recipe mrpo                 # can a policy buy reward with exploits?
  medrl sft   --recipe sft --model <vlm> --data vqa_rad --out runs/warmup
  medrl train --recipe mrpo --model runs/warmup --data vqa_rad --judge reference --out runs/mrpo
  medrl eval  --model runs/mrpo --data vqa_rad:test --judge reference --out evals/mrpo
  medrl analyze evals/mrpo                          # FFP / FAR figures and report
  medrl demo                                        # all of the above, offline, on real VQA-RAD

Run `medrl <command> --help` for the options of each command.
"""


def _load(name: str):
    return importlib.import_module(f"medrl.commands.{COMMANDS[name]}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="medrl",
        description="RL post-training of medical vision-language models toward step-wise sound "
        "clinical reasoning (MRPO, ARMed, CAPO, MediX-R1, StepGRPO and their baselines).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name in COMMANDS:
        if name == chosen:
            mod = _load(name)
            p = sub.add_parser(
                name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
        else:
            try:
                help_line = _load(name).HELP
            except ImportError:
                continue  # command not available in this install
            sub.add_parser(name, help=help_line)
    args = parser.parse_args(argv)
    # deprecation notices of the libraries underneath (gradient_checkpointing renames, ...) are
    # for developers of medrl, not its users; they would drown the progress bars
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|accelerate|peft)(\.|$)")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0 if not argv else 2
    return int(args._run(args) or 0)


def _version() -> str:
    from medrl import __version__

    return f"medrl {__version__}"


if __name__ == "__main__":
    sys.exit(main())
