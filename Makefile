# Two commands do all set-up: `make quickstart` (install what the quickstart needs, run it offline) and
# `make test` (install the dev tools, run the test suite). CI runs `make lint test test-slow` (.ci/run).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: quickstart test test-slow lint

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# What the quickstart needs: the library, BM25 for its retriever runs and matplotlib for the report's plots
# (no test or lint tools; a library-only install is `pip install .`).
$(VENV)/.runtime: pyproject.toml | $(PY)
	$(PIP) -e '.[examples,plots]'
	touch $@

# The dev install: the runtime plus pytest, ruff, mypy and the reference implementations tests compare to.
$(VENV)/.dev: pyproject.toml | $(PY)
	$(PIP) -e '.[dev]'
	touch $(VENV)/.runtime $@

quickstart: $(VENV)/.runtime
	$(VENV)/bin/ragmetrics run configs/quickstart.yaml
	@echo "ragmetrics is installed in $(VENV): run 'source $(VENV)/bin/activate' to use the ragmetrics command, or call $(VENV)/bin/ragmetrics"

# The README's test command: every test not marked slow (slow ones run in CI's second step), on WORKERS
# processes (pytest-xdist; WORKERS=0 runs them in this one). The slow step stays in one process: the Ray
# engine's local cluster times out when another test takes its CPUs.
WORKERS ?= 2
test: $(VENV)/.dev
	$(PY) -m pytest -q -m "not slow" -n $(WORKERS)

test-slow: $(VENV)/.dev
	$(PY) -m pytest -q -m slow || [ $$? -eq 5 ]  # 5: no test selected

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy ragmetrics
