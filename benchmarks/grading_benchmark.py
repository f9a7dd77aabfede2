"""Grade one synthetic class with plain ``nbgrader autograde`` and with ``mha_course.safegrade``.

    PYTHONPATH=tests .venv/bin/python -m benchmarks.grading_benchmark [--students 60] [--workers 2xCORES] [--timeout 5]
    PYTHONPATH=tests .venv/bin/python -m benchmarks.grading_benchmark --similarity-rounds 3   # the similarity pass's cost

The class is made by the safegrade tests' own helpers (``tests/safegrade_support.py``), which
import one another as top-level modules, as pytest imports them: hence ``PYTHONPATH=tests``.

The class (exercise 01) mixes full, partial and blank answers with hostile submissions (patched
numpy, a fake int, a cell that sleeps past the time limit, a corrupt file, edited tests, a crash). Both graders run on the
same machine, one after the other, with the course's own ``nbgrader_config.py`` (so both rebuild
each notebook and run it in the sandboxed kernel) and the same per-cell timeout; the script prints
both wall times, their ratio, the machine's load before each run, and whether the honest
students' grades agree exactly. Not a test: nothing here is asserted.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELPERS = ("safegrade_support", "grading_support", "booktoc")  # tests/: the class and its expected grades

try:
    from safegrade_support import A, honest, hostile, results, scores, write
except ModuleNotFoundError as error:
    if error.name not in HELPERS:
        raise
    sys.exit(f"grading_benchmark: no module {error.name!r}: the class comes from the tests' helpers; run "
             "PYTHONPATH=tests .venv/bin/python -m benchmarks.grading_benchmark from the repository")

#: Hostile kinds of ``safegrade_support.hostile`` (a name it no longer has fails at once: tests/test_grading_benchmark.py).
HOSTILE = ("patch_isclose", "fake_int", "sleep", "corrupt", "edit_tests", "exit_kernel")


def make_class(n, folder):
    """``n`` students: honest kinds in turn, one hostile in every ten (the last one in a class under ten);
    returns the honest names."""
    kinds, attacks = honest(), hostile()
    students, honest_names = {}, []
    for i in range(n):
        if i % 10 == 9 or (n < 10 and i == n - 1):
            name = HOSTILE[(i // 10) % len(HOSTILE)]
            students[f"{i:03d}_{name}"] = attacks[name]
        else:
            name = list(kinds)[i % len(kinds)]
            students[f"{i:03d}_{name}"] = kinds[name]
            honest_names.append(f"{i:03d}_{name}")
    write(students, folder)
    return honest_names


def plain_nbgrader(submitted, work, timeout):
    """``nbgrader autograde`` over the whole class; ``{student: {grade_id: score}}`` from its gradebook."""
    from nbgrader.api import Gradebook

    course = work / "plain"
    shutil.copytree(ROOT / "solutions" / A, course / "solutions" / A)
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(submitted, course / "submitted")
    nbgrader = [str(Path(sys.executable).parent / "nbgrader")]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(nbgrader + ["generate_assignment", A, "--force"], cwd=course, env=env, capture_output=True, check=True)
    start = time.perf_counter()
    subprocess.run(nbgrader + ["autograde", A, f"--Execute.timeout={timeout}"], cwd=course, env=env, capture_output=True)
    wall = time.perf_counter() - start
    grades = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for submission in gradebook.assignment_submissions(A):
            notebook = gradebook.find_submission_notebook(A, A, submission.student.id)
            grades[submission.student.id] = {g.cell.name: float(g.score) for g in notebook.grades}
    return wall, grades


def safe(submitted, work, workers, timeout, similarity=True, tag="safe"):
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mha_course.safegrade", "--assignment", A, str(submitted), "--out",
                    str(work / f"{tag}_out"), "--course", str(work / f"{tag}_course"), "--workers", str(workers),
                    "--timeout", str(timeout), "--no-progress", *([] if similarity else ["--no-similarity"])],
                   cwd=ROOT, capture_output=True, check=True)
    wall = time.perf_counter() - start
    return wall, {s: scores(r) for s, r in results(work / f"{tag}_out").items()}


def similarity_overhead(submitted, work, workers, timeout, rounds):
    """safegrade without and with the similarity pass, interleaved ``rounds`` times (a loaded machine drifts)."""
    walls = {False: [], True: []}
    for k in range(rounds):
        for on in (False, True) if k % 2 == 0 else (True, False):
            walls[on].append(safe(submitted, work, workers, timeout, on, f"r{k}_{int(on)}")[0])
    return walls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1), help="as safegrade's default")
    parser.add_argument("--timeout", type=int, default=5, help="seconds a cell may run, both graders")
    parser.add_argument("--similarity-rounds", type=int, default=0,
                        help="instead: safegrade without and with the similarity pass, interleaved, this many rounds")
    args = parser.parse_args(argv)
    if args.similarity_rounds:
        with tempfile.TemporaryDirectory(prefix="mha_grading_bench_") as tmp:
            make_class(args.students, Path(tmp) / "submitted")
            walls = similarity_overhead(Path(tmp) / "submitted", Path(tmp), args.workers, args.timeout,
                                        args.similarity_rounds)
        for on in (False, True):
            print(f"safegrade {'with' if on else 'without'} the similarity pass: "
                  + ", ".join(f"{w:.1f}" for w in walls[on]) + f" s (median {statistics.median(walls[on]):.1f} s)")
        print(f"overhead of the median: {statistics.median(walls[True]) / statistics.median(walls[False]) - 1:+.1%}")
        return 0
    with tempfile.TemporaryDirectory(prefix="mha_grading_bench_") as tmp:
        work = Path(tmp)
        honest_names = make_class(args.students, work / "submitted")
        load_plain = os.getloadavg()[0]
        plain_wall, plain = plain_nbgrader(work / "submitted", work, args.timeout)
        load_safe = os.getloadavg()[0]
        safe_wall, safegraded = safe(work / "submitted", work, args.workers, args.timeout)
    agree = all(plain.get(s) == safegraded.get(s) for s in honest_names)
    differ = [s for s in honest_names if plain.get(s) != safegraded.get(s)]
    print(f"class: {args.students} submissions ({len(honest_names)} honest), {os.cpu_count()} cores, "
          f"{args.workers} safegrade workers, cell timeout {args.timeout} s")
    print(f"nbgrader autograde:       {plain_wall:7.1f} s   (1-minute load average before: {load_plain:.1f})")
    print(f"mha_course.safegrade:     {safe_wall:7.1f} s   (1-minute load average before: {load_safe:.1f})")
    print(f"speed-up: {plain_wall / safe_wall:.2f}x   (target at 2 cores: 1.8x)")
    print(f"honest grades identical: {agree}" + (f" (differ: {', '.join(differ[:10])})" if differ else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
