# Two commands do all set-up: `make quickstart` (install what the quickstart needs, run it offline) and
# `make test` (install the dev tools, run the test suite). CI runs `make lint test test-slow` (.ci/run); `make lint`
# builds the documentation site too (`make docs`).
VENV ?= .venv
PY := $(VENV)/bin/python
# Every install takes the versions in constraints.txt (and build tools from .ci/build-constraints.txt), so a
# fresh machine resolves what CI last passed with, not whatever a registry serves that day.
CONSTRAINTS := -c constraints.txt --build-constraint .ci/build-constraints.txt
PIP := $(PY) -m pip install --quiet --disable-pip-version-check $(CONSTRAINTS)

.PHONY: quickstart test test-slow lint docs constraints

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt --upgrade pip

# What the quickstart needs: the library, BM25 for its retriever runs and matplotlib for the report's plots
# (no test or lint tools; a library-only install is `pip install .`).
$(VENV)/.runtime: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e '.[examples,plots]'
	touch $@

# The dev install: the runtime plus pytest, ruff, mypy and the reference implementations tests compare to.
$(VENV)/.dev: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e '.[dev]'
	touch $(VENV)/.runtime $@

quickstart: $(VENV)/.runtime
	$(VENV)/bin/ragmetrics run configs/quickstart.yaml
	@echo "ragmetrics is installed in $(VENV): run 'source $(VENV)/bin/activate' to use the ragmetrics command, or call $(VENV)/bin/ragmetrics"

# The README's test command: every test not marked slow (slow ones run in CI's second step), on WORKERS
# processes (pytest-xdist; WORKERS=0 runs them in this one).
WORKERS ?= 2
test: $(VENV)/.dev
	$(PY) -m pytest -q -m "not slow" -n $(WORKERS)

# The slow step in two runs. First every slow test not marked `alone`, on WORKERS processes: most of them wait
# on a server, a subprocess or a pip install, so two at a time fill the cores that one leaves idle. A file's tests
# stay on one worker (--dist loadfile), so a module's server or cluster starts once. Then the `alone` ones (the
# Ray engine, whose local cluster times out when another test takes its CPUs) in one process by themselves.
# Exit 5 is pytest's "no test selected" (a filter that matches nothing here is not a failure).
test-slow: $(VENV)/.dev
	$(PY) -m pytest -q -m "slow and not alone" -n $(WORKERS) --dist loadfile || [ $$? -eq 5 ]
	$(PY) -m pytest -q -m "slow and alone" || [ $$? -eq 5 ]

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy ragmetrics
	$(MKDOCS)

# The documentation site (mkdocs.yml) into site/: --strict, so a broken link or anchor, a page missing from the
# nav, a link to a repository file that is not there or a docstring cross-reference to nothing fails. Seconds.
# NO_MKDOCS_2_WARNING: Material's banner about its successor, printed on every build, is not about this site.
# Never --quiet: it drops the warnings before --strict counts them, and a broken link would pass.
MKDOCS = NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
docs: $(VENV)/.dev
	$(MKDOCS)

# After a change to pyproject.toml's dependencies: resolve every extra afresh in a scratch venv and write the
# versions that installed together to constraints.txt (review the diff; CI installs exactly these).
constraints:
	rm -rf .constraints-venv && python3 -m venv .constraints-venv
	.constraints-venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	.constraints-venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev,docs,examples,plots,traces,live,ray,mlflow,phoenix]'
	{ echo "# Every package the dev install (and so CI) takes, at versions that resolved together (make constraints)."; \
	  .constraints-venv/bin/python -m pip freeze --all --exclude-editable | grep -v -e '^ragmetrics' -e '^setuptools=='; } > constraints.txt
	rm -rf .constraints-venv
