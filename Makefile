# Two entry points (see README): `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0

.PHONY: setup sandbox-tool demo test test-python lint test-client gpu-test gpu-bench clean

setup: $(VENV)/.installed

# Candidates run inside bubblewrap; as root with apt-get it is installed where missing, otherwise
# `kernelevo doctor` says what to do.
sandbox-tool:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -q --no-install-recommends bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends bubblewrap >/dev/null; }; }; } || \
	  echo "bubblewrap is not installed and could not be installed here: candidates will be refused without --no-sandbox"

# What running KernelEvo needs (the demo stops here); the dev extra (tests, ray) comes on top.
$(VENV)/.core: pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed: $(VENV)/.core
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

# The main job: optimize every bundled example (offline search without an API key;
# without a GPU, candidates are verified on the CPU and speed is not measured).
demo: $(VENV)/.core sandbox-tool
	$(BIN)/kernelevo doctor
	$(BIN)/kernelevo optimize examples/ --iterations 4

node_modules/.installed: package.json package-lock.json client-vscode/package.json
	npm ci --no-audit --no-fund
	touch $@

test: test-python test-client

test-python: setup sandbox-tool lint
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# Lint, format and type check (seconds; config in pyproject.toml). mypy sees the server under
# its import name through a link, as setuptools installs it.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p build/mypy-path && ln -sfn $(CURDIR)/server build/mypy-path/kernelevo_server
	$(BIN)/mypy

test-client: setup node_modules/.installed
	KERNELEVO_TEST_PYTHON=$(abspath $(BIN)/python) npm test

gpu-test: setup
	$(BIN)/python -m pytest -q -m gpu

# Every benchmark (most need a GPU), and docs/BENCHMARKS.md's current table from their figures.
gpu-bench: setup
	$(BIN)/python bench/gpu_bench.py --write

clean:
	rm -rf $(VENV) node_modules .kernelevo
