"""No solution-equivalent code in what the learner edition ships (issue 37).

The site's leak test (tests/test_site.py) looks for solution lines as written. The browser edition
also packs the judge's code into its kernel (every ``solutions/<a>/grading_questions.py``, the
kernel side of ``mha_course``, the page's hook), and a line of a solution with its names changed
and its comments gone is still the solution: exercise 11's slip simulator, pasted as Q2's answer,
scored full marks. Here every solution-region line of 10 tokens or more is normalised
(:func:`mha_course.grade.similarity.normalised_lines`: the author's names become ``V``, strings ``S``,
comments and layout go) and looked for, normalised alike, in that code. Lines a release shows the
learner anyway (06's buggy code to fix) are given, not leaked. ``mha_kit`` is public by design (the
book computes everything with it; the instructor's guide says so) and is not searched.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
import pytest

from mha_course.course import ASSIGNMENTS, BROWSER_SIDE, package_files
from mha_course.grade.similarity import normalised_lines

ROOT = Path(__file__).resolve().parent.parent
#: Assignments whose judge files still hold solution lines (none since 11 and 12 compute their slips through mha_kit).
PENDING = set()
_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def shipped_code(root=ROOT):
    """``{file: normalised lines}`` of the Python the browser edition packs beside ``mha_kit``."""
    files = [*root.glob("solutions/*/grading_questions.py"), *(root / name for name in package_files(BROWSER_SIDE)),
             root / "website" / "lite" / "mha_lite" / "__init__.py"]
    return {p.relative_to(root).as_posix(): normalised_lines(p.read_text(encoding="utf-8")) for p in files}


def _code_cells(kind, assignment):
    nb = nbformat.read(ROOT / kind / assignment / f"{assignment}.ipynb", as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def given_lines():
    """Normalised lines every release shows the learner (stubs, 06's buggy code): not a leak wherever they are."""
    return set().union(*(normalised_lines(source) for a in ASSIGNMENTS for source in _code_cells("exercises", a)))


def solution_lines(assignment):
    """The normalised lines of ``assignment``'s solution regions, less those a release shows anyway."""
    lines = set()
    for source in _code_cells("solutions", assignment):
        for region in _REGION.findall(source):
            lines |= normalised_lines(textwrap.dedent(region))
    return lines - given_lines()


def leaks(lines, shipped):
    """``{file: sorted lines}`` of ``lines`` found in ``shipped`` (:func:`shipped_code`)."""
    return {f: sorted(lines & found) for f, found in shipped.items() if lines & found}


@pytest.fixture(scope="module")
def shipped():
    return shipped_code()


@pytest.mark.parametrize("assignment", [pytest.param(a, marks=pytest.mark.xfail(
    strict=True, reason="issue 36's judge files of 11 and 12 still hold solution lines (issue 37's report)"))
    if a in PENDING else a for a in ASSIGNMENTS])
def test_no_normalised_solution_line_ships_in_the_judge_files(shipped, assignment):
    found = leaks(solution_lines(assignment), shipped)
    assert not found, f"{assignment}'s solution, names changed, in the learner edition: {found}"


SLIP_SIMULATOR = '''
def _reuse_with_slip(stream, size, cap=True, whole=True, chained=True, outputs=True):
    def key(tokens, end):
        return tuple(tokens[:end]) if chained else tuple(tokens[end - size:end])

    reused, cached = [], set()
    for prompt, output in stream:
        matched = 0
        while matched + size <= len(prompt) and key(prompt, matched + size) in cached:
            matched += size
        kept = min(matched, len(prompt) - 1) if cap else matched
        reused.append(kept // size * size if whole else kept)
        sequence = prompt + (output if outputs else [])
        cached.update(key(sequence, end) for end in range(size, len(sequence) + 1, size))
    return reused
'''


def test_the_normalised_comparison_catches_11s_slip_simulator_as_q2s_answer():
    """The red team's case: the simulator (exercise 11's judge file, as packed) holds Q2's answer, names changed."""
    found = leaks(solution_lines("11_serving_2026"), {"grading_questions.py": normalised_lines(SLIP_SIMULATOR)})
    assert len(found.get("grading_questions.py", [])) >= 2, found
    exact = {line.strip() for line in SLIP_SIMULATOR.splitlines()}  # what the exact-line test compares
    solution = {line.strip() for s in _code_cells("solutions", "11_serving_2026") for r in _REGION.findall(s)
                for line in r.splitlines() if len(line.strip()) > 30}
    assert not exact & solution  # not one line as written: only the normalised comparison sees it


def test_normalising_strips_names_comments_and_strings_but_keeps_the_computation():
    a = normalised_lines("scores = q @ k.T / np.sqrt(k.shape[-1])  # scale\n")
    b = normalised_lines("s = query @ key.T / np.sqrt(key.shape[-1])\n")
    c = normalised_lines("s = query @ key.T * np.sqrt(key.shape[-1])\n")
    assert a == b != c and a == {"V = V @ V . T / np . sqrt ( V . shape [ - 1 ] )"}
