# the-loop: `make check` is the one gate; `make demo` runs the main job for real.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install check lint format typecheck mdlint configs test demo bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

check: install
	$(BIN)/ruff check the_loop tests scripts
	$(BIN)/ruff format --check the_loop tests scripts
	$(BIN)/pyright
	$(BIN)/pymarkdown --config .pymarkdown.json scan README.md docs
	$(BIN)/python scripts/validate_config.py docs/examples/*.yaml
	$(BIN)/pytest

format: install
	$(BIN)/ruff format the_loop tests scripts
	$(BIN)/ruff check --fix the_loop tests scripts

test: install
	$(BIN)/pytest

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

bench: install
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
