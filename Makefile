# make book          build the HTML book into _build/html (fails on any warning)
# make learner-book  the learner edition into _build/learner/html: no worked
#                    solution, no hidden test, no instructor's guide (what is
#                    published, and what a graded class gets)
# make release       the bundle for a graded class: _build/release/ holds the
#                    learner edition (site/) and the exercises (exercises/),
#                    packed as _build/mha-course-release.tar.gz
# make test          run every test: unit tests, nbval over the chapters and
#                    the exercise solutions, the site build and the browser tests
# make check         the unit tests only (mha_kit and pure Python: no notebook
#                    run, no grading, no site, no browser), in under a minute;
#                    tests/suites.py says which test modules they are
# make lint          ruff over the whole repository (pyproject.toml [tool.ruff])
# make serve         read the built book on http://127.0.0.1:8000
#                    (SITE=_build/learner/html make serve: the learner edition)
# make lab           open the exercises in JupyterLab, in a working copy (work/), as a learner
# make lite-env      the browser edition's own environment, .venv-lite (requirements-lite.txt);
#                    make learner-book and make test create it on first use
# make test-numpy-floor  mha_kit's unit tests on numpy 1.25.2, the oldest numpy it supports
#                    (the browser edition's), in .venv-numpy-floor
# make clean         remove the build output
#
# MHA_REPOSITORY_URL=https://github.com/<owner>/<repo> adds the repository,
# issue and Binder buttons to any build (website/ext/site_buttons.py); without it
# the site shows none.
#
# Both `book` and `test` create .venv (python3.11) and install
# requirements.txt, requirements-bench.txt (numba and threadpoolctl, for the
# decode benchmark's fused kernel and its tests) and mha_kit on first use;
# reruns skip that step until one of those files changes.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers: two more than the cores. The tests wait on kernels, browsers and sleeps
# part of the time. On 2 cores, 2026-12-02 (make test, WORKERS=N): two workers left the CPUs 19 %
# idle (5:54); three 5 % (5:36, 5:02, interleaved with four); four 1.5-2 % (5:22, 4:43, 4:36), for
# the same CPU-seconds (540-640, as the host's speed varied).
WORKERS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN) + 2 )))
# make check runs serially: on two cores, xdist workers (each collecting the suite again) cost
# more CPU than they save on 30 seconds of tests.
CHECK_WORKERS ?= 0
PORT ?= 8000
SITE ?= _build/html

# Kernels started by jupyter-book and nbval run this venv's Python.
export PATH := $(abspath $(BIN)):$(PATH)
# ipykernel's debugger would otherwise print a frozen-modules warning to stderr.
export PYDEVD_DISABLE_FILE_VALIDATION := 1

# Notebooks nbval re-executes and compares with their stored outputs.
CHAPTERS := $(wildcard book/*.ipynb)
SOLUTIONS := $(wildcard solutions/*/*.ipynb solutions/*.ipynb)

.PHONY: all book learner-book release test check lint serve lab clean distclean env lite-env test-numpy-floor

all: book

env: $(STAMP)

# The last step builds matplotlib's font cache now, not in a notebook's first
# figure cell, where its one-off notice would land in the outputs on stderr.
$(STAMP): requirements.txt requirements-bench.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt -r requirements-bench.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[plots,course]"
	$(BIN)/python -c "import matplotlib.pyplot"
	touch $@

# The browser edition (JupyterLite, website/lite/site.py) builds in its own pinned environment,
# so that it never constrains the project's JupyterLab.
LITE_VENV := .venv-lite
LITE_STAMP := $(LITE_VENV)/.installed
lite-env: $(LITE_STAMP)

$(LITE_STAMP): requirements-lite.txt
	test -x $(LITE_VENV)/bin/python || $(PYTHON) -m venv $(LITE_VENV)
	$(LITE_VENV)/bin/python -m pip install --disable-pip-version-check -q -r requirements-lite.txt
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html -W --keep-going -n

# website/build.py runs the same jupyter-book command with MHA_HIDE_SOLUTIONS=1
# and also keeps its log (_build/learner/build.log), which the site tests read
# when handed this build (MHA_BUILT_SITE=_build/learner make test); without it
# they build their own, from the outputs nbval checks in the same run.
learner-book: $(STAMP) $(LITE_STAMP)
	$(BIN)/python -m website.build --learner _build/learner

release: learner-book
	rm -rf _build/release _build/mha-course-release.tar.gz
	mkdir -p _build/release
	cp -R _build/learner/html _build/release/site
	tar -C . --exclude=.ipynb_checkpoints -cf - exercises | tar -C _build/release -xf -
	printf '%s\n' "site/index.html: the book (open it in a browser, or serve the folder)." \
		"exercises/: the assignments; see the book's chapter Exercises." > _build/release/README.txt
	tar -C _build -czf _build/mha-course-release.tar.gz release
	@echo "release: _build/release/ (site/ and exercises/), packed as _build/mha-course-release.tar.gz"

# One OpenBLAS thread per process: the run keeps more processes busy than there are cores (workers,
# kernels, commands), and OpenBLAS's own pool of threads costs each numpy import 0.1 CPU-seconds
# and spins between calls (nbval over the notebooks: 129 -> 118 CPU-seconds on 2 cores). Results
# and stored outputs are the same either way; the grading kernels always run with one thread.
# Python writes its bytecode caches (__pycache__/, ignored by git) during the tests even where the environment
# turns them off (PYTHONDONTWRITEBYTECODE, set in some containers, CI's among them): the tests start about 500
# Python processes (nbval's and the graders' kernels, safegrade, nbgrader and the site build), and each would
# compile mha_kit and mha_course from source again. compileall writes them once, before the workers race to.
# Measured on 2 cores (2026-12-06): the chapters' and solutions' nbval, 159 CPU-seconds without caches, 142 with.
# tests/assertion_cache.py does the same for pytest's caches of the test modules with their asserts rewritten, which
# each worker would otherwise write for itself: 4 CPU-seconds on both cores instead of 7 in each of the workers.
#
# The unit tests (tests/suites.py's UNIT, what make check runs) run in one process of their own, beside the
# workers that run the rest: handed to the workers, their ~6,300 tests cost 69 CPU-seconds instead of 31 run
# in one process (each test's reports go from a worker to pytest-xdist's controller, and each worker collects
# every module; measured on 2 cores, 2026-12-07). Their output is printed when the workers are done, from
# _build/unit-tests.log; either run failing fails make test. Their own cache folder keeps --lf's record of each.
UNIT_LOG := _build/unit-tests.log
test: $(STAMP) $(LITE_STAMP)
	$(BIN)/python -m compileall -q -j 0 mha_kit mha_course website benchmarks tests
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python tests/assertion_cache.py
	@mkdir -p $(dir $(UNIT_LOG)); rm -f $(UNIT_LOG); \
	echo "make test: the unit tests in one process (output: $(UNIT_LOG), printed at the end), the rest on $(WORKERS) workers"; \
	env -u PYTHONDONTWRITEBYTECODE OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -o cache_dir=.pytest_cache/unit \
		--durations=5 --suite unit tests > $(UNIT_LOG) 2>&1 & unit=$$!; \
	env -u PYTHONDONTWRITEBYTECODE OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder --durations=10 \
		--suite full tests $(CHAPTERS) $(SOLUTIONS) \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg; rest=$$?; \
	wait $$unit; units=$$?; \
	echo "================ the unit tests (tests/suites.py UNIT, one process): $(UNIT_LOG) ================"; \
	cat $(UNIT_LOG); \
	echo "make test: unit tests exited $$units, the rest $$rest"; \
	test $$units -eq 0 -a $$rest -eq 0

# The unit tests: the modules tests/suites.py lists as UNIT (tests/conftest.py also marks their
# tests `unit`, so `pytest -m unit` picks the same ones); collecting only those files (--suite unit:
# tests/conftest.py) keeps the grading, notebook and browser modules' imports out of it.
check: $(STAMP)
	$(BIN)/python -m pytest -n $(CHECK_WORKERS) --suite unit tests

lint: $(STAMP)
	$(BIN)/ruff check .

# mha_kit on the oldest numpy it supports (pyproject.toml: numpy>=1.25), the one the browser
# edition's kernel has: its unit tests (tests/numpy_floor.py lists them) in a venv of their own.
NUMPY_FLOOR := 1.25.2
FLOOR_VENV := .venv-numpy-floor
FLOOR_STAMP := $(FLOOR_VENV)/.installed-$(NUMPY_FLOOR)

$(FLOOR_STAMP):
	test -x $(FLOOR_VENV)/bin/python || $(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -m pip install --disable-pip-version-check -q numpy==$(NUMPY_FLOOR) \
		$$(grep -E '^(pytest|hypothesis)==' requirements.txt)
	touch $@

test-numpy-floor: $(FLOOR_STAMP)
	PYTHONPATH=$(CURDIR) $(FLOOR_VENV)/bin/python -m pytest -q $$($(FLOOR_VENV)/bin/python tests/numpy_floor.py)

serve:
	@test -f $(SITE)/index.html || { echo "No built book in $(SITE): run 'make book' (or 'make learner-book') first."; exit 1; }
	@echo "Serving $(SITE) on http://127.0.0.1:$(PORT)/ (Ctrl-C stops it)"
	python3 -m http.server $(PORT) --bind 127.0.0.1 --directory $(SITE)

# The working copy work/ gets the exercise files it lacks; the learner's own are never overwritten.
LAB_PORT ?= 8888
lab: $(STAMP)
	$(BIN)/python -m mha_course.lab --port $(LAB_PORT)

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV) $(LITE_VENV) $(FLOOR_VENV)
