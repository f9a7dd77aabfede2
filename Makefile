# make book   build the HTML book into _build/html (fails on any warning)
# make test   run every test: unit tests, nbval over the chapters and the
#             exercise solutions, the site build and the browser test
# make serve  read the built book on http://127.0.0.1:8000
# make lab    open the exercises in JupyterLab, in a working copy (work/), as a learner
# make clean  remove the build output
#
# Both `book` and `test` create .venv (python3.11) and install
# requirements.txt and mha_kit on first use; reruns skip that step until
# requirements.txt or pyproject.toml change.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers; `auto` is one per core.
WORKERS ?= auto
PORT ?= 8000

# Kernels started by jupyter-book and nbval run this venv's Python.
export PATH := $(abspath $(BIN)):$(PATH)
# ipykernel's debugger would otherwise print a frozen-modules warning to stderr.
export PYDEVD_DISABLE_FILE_VALIDATION := 1

# Notebooks nbval re-executes and compares with their stored outputs.
CHAPTERS := $(wildcard book/*.ipynb)
SOLUTIONS := $(wildcard solutions/*/*.ipynb solutions/*.ipynb)

.PHONY: all book test serve lab clean distclean env

all: book

env: $(STAMP)

# The last step builds matplotlib's font cache now, not in a notebook's first
# figure cell, where its one-off notice would land in the outputs on stderr.
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q -e .
	$(BIN)/python -c "import matplotlib.pyplot"
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html -W --keep-going -n

test: $(STAMP)
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --durations=10 \
		tests $(CHAPTERS) $(SOLUTIONS) \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

serve:
	@test -f _build/html/index.html || { echo "No built book: run 'make book' first."; exit 1; }
	@echo "Serving the book on http://127.0.0.1:$(PORT)/ (Ctrl-C stops it)"
	python3 -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

# The working copy work/ gets the exercise files it lacks; the learner's own are never overwritten.
LAB_PORT ?= 8888
lab: $(STAMP)
	$(BIN)/python -m mha_course.lab --port $(LAB_PORT)

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV)
