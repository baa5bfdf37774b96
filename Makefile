# the-loop: `make check` is the one gate; `make demo` runs the main job for real.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.runtime-installed
# Upstream (the-loopy-one on PyPI), in a venv of its own: the tests run its code to read
# what we write. Its package is also called `the_loop`, and its dependencies are not ours.
# tests/test_upstream_reads_lane.py pins the same version.
UPSTREAM_VERSION := 20.10.2
UPSTREAM_VENV := .venv-upstream
UPSTREAM_STAMP := $(UPSTREAM_VENV)/.installed-$(UPSTREAM_VERSION)

.PHONY: install install-upstream install-runtime check lint format typecheck mdlint configs test demo bench clean agent

install: $(STAMP) install-upstream

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install-upstream: $(UPSTREAM_STAMP)

$(UPSTREAM_STAMP):
	rm -rf $(UPSTREAM_VENV)
	$(PYTHON) -m venv $(UPSTREAM_VENV)
	$(UPSTREAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(UPSTREAM_VENV)/bin/python -m pip install --quiet 'the-loopy-one==$(UPSTREAM_VERSION)'
	touch $(UPSTREAM_STAMP)

# The runtime dependencies alone (what `the-loop` itself needs, as the demo does): no dev tools.
install-runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

check: install agent
	$(BIN)/ruff check the_loop tests scripts
	$(BIN)/ruff format --check the_loop tests scripts
	$(BIN)/pyright
	$(BIN)/pymarkdown --config .pymarkdown.json scan README.md docs
	for config in docs/examples/*.yaml; do $(BIN)/the-loop config check --config "$$config" || exit 1; done
	scripts/run_tests.sh $(BIN)/pytest

format: install
	$(BIN)/ruff format the_loop tests scripts
	$(BIN)/ruff check --fix the_loop tests scripts

test: install agent
	$(BIN)/pytest

demo: install-runtime
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

# The pinned Claude Code CLI (tests/agent-version.txt) in .tools/agent, for the real-agent tests.
agent:
	bash scripts/install_agent.sh

bench: install agent
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) $(UPSTREAM_VENV) .pytest_cache .ruff_cache build *.egg-info
