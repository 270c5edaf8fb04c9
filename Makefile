# Two commands do all set-up: `make quickstart` (install + run the offline quickstart) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: quickstart test lint

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

quickstart: $(VENV)/.installed
	$(VENV)/bin/ragmetrics run configs/quickstart.yaml

test: $(VENV)/.installed
	$(PY) -m pytest -q

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy ragmetrics
