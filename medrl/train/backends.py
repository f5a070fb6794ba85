"""Optional packages a run's settings name, checked before any model loads.

A setting that needs a package medrl does not depend on - vLLM generation (``grpo.use_vllm``,
``medrl eval --backend vllm``), DeepSpeed (``grpo.deepspeed``), a tracker in ``report_to``
(wandb, mlflow, comet_ml, ...), 4-bit QLoRA loading (bitsandbytes) - used to pass the preflight
and fail after the model had loaded, in the library's traceback. :func:`backend_problems` gives
one line per missing package, naming the setting, the package and how to install it (a medrl
extra where there is one: ``pip install 'medrl[vllm]'``).
"""

from __future__ import annotations

import importlib.util
from typing import Any

#: report_to name -> (module transformers imports, what to install)
TRACKERS = {
    "wandb": ("wandb", "pip install 'medrl[wandb]'"),
    "tensorboard": ("tensorboard", "pip install tensorboard"),
    "mlflow": ("mlflow", "pip install mlflow"),
    "comet_ml": ("comet_ml", "pip install comet_ml"),
    "neptune": ("neptune", "pip install neptune"),
    "clearml": ("clearml", "pip install clearml"),
    "dvclive": ("dvclive", "pip install dvclive"),
    "swanlab": ("swanlab", "pip install swanlab"),
    "trackio": ("trackio", "pip install trackio"),
    "codecarbon": ("codecarbon", "pip install codecarbon"),
    "azure_ml": ("azureml", "pip install azureml-core"),
    "dagshub": ("dagshub", "pip install dagshub"),
    "flyte": ("flytekit", "pip install flytekit"),
    "kubeflow": ("kubeflow", "pip install kubeflow"),
}

VLLM_INSTALL = "pip install 'medrl[vllm]' (on a CUDA machine)"
DEEPSPEED_INSTALL = "pip install 'medrl[deepspeed]'"


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def vllm_problem(setting: str) -> str | None:
    """One line when vLLM, which ``setting`` asks for, is not installed."""
    if installed("vllm"):
        return None
    return f"{setting} needs vLLM, which is not installed: {VLLM_INSTALL}, or leave vLLM off"


def report_to_names(value: Any) -> list[str]:
    """``report_to`` as a list of tracker names ("all" stays "all"; "none" and None are [])."""
    if value is None or value == "none":
        return []
    names = [value] if isinstance(value, str) else list(value)
    return [str(n) for n in names if str(n) != "none"]


def trainer_problems(section: dict, where: str) -> list[str]:
    """Missing packages for a ``grpo`` / ``sft`` section's settings: vLLM, DeepSpeed (its
    config file must exist too), and each tracker in ``report_to``."""
    problems = []
    section = section or {}
    if section.get("use_vllm"):
        why = vllm_problem(f"{where}.use_vllm=true")
        if why:
            problems.append(why)
    ds = section.get("deepspeed")
    if ds:
        if not installed("deepspeed"):
            problems.append(f"{where}.deepspeed needs DeepSpeed, which is not installed: {DEEPSPEED_INSTALL}")
        elif isinstance(ds, str):
            from pathlib import Path

            if not Path(ds).is_file():
                problems.append(f"{where}.deepspeed: no such DeepSpeed config file {ds!r}")
    import os

    if not ds and os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() in ("1", "true") \
            and not installed("deepspeed"):
        problems.append(f"accelerate launch with a DeepSpeed config needs DeepSpeed, which is not installed: "
                        f"{DEEPSPEED_INSTALL}")
    names = report_to_names(section.get("report_to", ["tensorboard"]))
    for name in names:
        if name == "all":  # transformers reports to whatever is installed
            continue
        if name not in TRACKERS:
            problems.append(f"{where}.report_to: unknown tracker {name!r}; transformers reports to "
                            f"{', '.join(sorted(TRACKERS))}")
            continue
        module, how = TRACKERS[name]
        if not installed(module) and not (name == "tensorboard" and installed("tensorboardX")):
            problems.append(f"{where}.report_to: {name} needs the {module} package, which is not installed: {how}")
    return problems


def backend_problems(recipe, *, sft_options: dict | None = None) -> list[str]:
    """One line per optional package the run's settings need and this machine lacks: the RL
    section's vLLM / DeepSpeed / trackers when the recipe trains with RL, the SFT section's when
    it runs an SFT stage (or ``sft_options``, ``medrl sft``'s resolved options), and bitsandbytes
    with a backend for 4-bit loading (``model.load_in_4bit``)."""
    from medrl.models.loading import quantization_problem
    from medrl.train.recipes import policy_load_options

    problems = []
    if sft_options is not None:
        problems += trainer_problems(sft_options, "sft")
    else:
        if recipe.rewards:
            problems += trainer_problems(recipe.grpo, "grpo")
        if not recipe.rewards or any(st.get("kind") == "sft" for st in recipe.stages or []):
            problems += trainer_problems(recipe.sft, "sft")
    quant = policy_load_options(recipe)["quantization"]
    if quant:
        why = quantization_problem(quant)
        if why:
            problems.append(why)
    return list(dict.fromkeys(problems))


__all__ = ["DEEPSPEED_INSTALL", "TRACKERS", "VLLM_INSTALL", "backend_problems", "installed", "report_to_names",
           "trainer_problems", "vllm_problem"]
