"""Shared machinery of the grading tests: build submissions, grade them in one subprocess.

A *submission* starts from the released notebook (what a learner downloads) with every answer
cell filled from the solutions, then changes some answers: ``None`` keeps the release's stub
(an unanswered question); a ``(old, new)`` pair edits the solution's text (a plausible mistake).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
#: The course's assignments, from the course manifest.
from mha_course.course import ASSIGNMENTS  # noqa: E402


def read(kind, assignment):
    """The notebook of ``assignment`` in ``solutions`` or ``exercises``."""
    return nbformat.read(ROOT / kind / assignment / f"{assignment}.ipynb", as_version=4)


def _nbgrader(cell):
    return cell.metadata.get("nbgrader", {})


def answer_ids(assignment):
    """grade_ids of the answer (solution) cells, in order."""
    return [_nbgrader(c)["grade_id"] for c in read("solutions", assignment).cells if _nbgrader(c).get("solution")]


def points_of_tests(assignment):
    """``{test grade_id: points}`` in notebook order."""
    cells = read("solutions", assignment).cells
    return {_nbgrader(c)["grade_id"]: float(_nbgrader(c)["points"]) for c in cells if _nbgrader(c).get("grade")}


def tests_of_answer(assignment):
    """``{answer grade_id: [test grade_ids]}``: the test cells after an answer, up to the next answer."""
    owner, result = None, {}
    for cell in read("solutions", assignment).cells:
        meta = _nbgrader(cell)
        if meta.get("solution"):
            owner = meta["grade_id"]
            result[owner] = []
        elif meta.get("grade"):
            result[owner].append(meta["grade_id"])
    return result


def submission(assignment, changes):
    """The release with every answer filled in from the solutions, then ``changes`` applied.

    ``changes`` maps an answer's grade_id to ``None`` (leave the stub) or ``(old, new)`` (replace
    the text ``old`` of the solution by ``new``; ``old`` must occur in it).
    """
    solutions = {_nbgrader(c)["grade_id"]: c.source for c in read("solutions", assignment).cells
                 if _nbgrader(c).get("solution")}
    nb = read("exercises", assignment)
    for cell in nb.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        if grade_id not in solutions:
            continue
        change = changes.get(grade_id, ())
        if change is None:
            continue  # keep the stub
        cell.source = solutions[grade_id]
        if change:
            old, new = change
            if old not in cell.source:
                raise ValueError(f"{old!r} does not occur in the solution of {grade_id}")
            cell.source = cell.source.replace(old, new)
    return nb


def grade_all(specs, workdir, overrides=(), with_errors=False, keep=False):
    """Grade ``{assignment: {student: notebook}}`` with ``python -m mha_course.grading`` in one subprocess.

    Returns ``{assignment: {student: {test grade_id: score}}}``, and with ``with_errors`` also
    ``{assignment: {student: {test grade_id: "Ename: evalue"}}}`` of the failing cells. With ``keep``
    the course stays in ``workdir / "course"`` (the autograded notebooks under ``autograded/``).
    """
    workdir = Path(workdir)
    spec = {}
    for assignment, students in specs.items():
        spec[assignment] = {}
        for student, nb in students.items():
            path = workdir / "in" / student / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
            spec[assignment][student] = str(path)
    (workdir / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    proc = subprocess.run([sys.executable, "-m", "mha_course.grading", str(workdir / "spec.json"), str(workdir / "out.json"),
                           *([f"--root={workdir / 'course'}"] if keep else []), *overrides],
                          capture_output=True, text=True, cwd=workdir, env=env, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"grading failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = json.loads((workdir / "out.json").read_text())
    scores = {a: {s: {gid: score for gid, (score, _) in grades.items()} for s, grades in students.items()}
              for a, students in out.items()}
    return (scores, json.loads((workdir / "out.errors.json").read_text())) if with_errors else scores


def lost_without(assignment, answer):
    """Test cells that score zero when ``answer`` is left blank: its own only. Answers building on it
    (``builds_on`` in the course manifest) are graded with the solution's ``answer`` in its place
    (error carried forward, :mod:`mha_course.judge.carry`)."""
    return set(tests_of_answer(assignment)[answer])


def expected_scores(assignment, lost):
    """Full marks on every test cell except those in ``lost``, which score zero."""
    return {gid: 0.0 if gid in lost else points for gid, points in points_of_tests(assignment).items()}


def designed(assignment):
    """The module ``solutions/<assignment>/grading_answers.py``: the designed answers the tests grade.

    It defines ``WRONG_ANSWERS``, a list of plausible wrong answers ``(name, answer grade_id, old
    text, new text, test cells that must score zero)`` (every other test cell keeps full marks);
    ``REFERENCE_CALLS``, ``{answer grade_id: source}`` of answers that only call the ``mha_kit``
    reference the question asks the learner to write (graded with the learner edition, each earns
    nothing for the test cells it feeds); ``NO_REFERENCE``, ``{answer grade_id: why}`` of the
    answers no ``mha_kit`` function answers; optionally ``HOSTILE`` and ``HONEST``
    (``test_grading_hostile``).
    """
    from mha_course.course import assignment_module

    return assignment_module(assignment, "grading_answers")


#: ``{assignment: [(name, answer grade_id, old text, new text, test cells that must score zero)]}``.
WRONG_ANSWERS = {a: designed(a).WRONG_ANSWERS for a in ASSIGNMENTS}
#: ``{assignment: {answer grade_id: source}}``: answers that only call a reference they must not use.
REFERENCE_CALLS = {a: designed(a).REFERENCE_CALLS for a in ASSIGNMENTS}
#: ``{assignment: {answer grade_id: why}}``: the answers with no forbidden reference at all.
NO_REFERENCE = {a: designed(a).NO_REFERENCE for a in ASSIGNMENTS}
#: ``[(assignment, name, {answer grade_id: source}, answers whose tests are lost, reason or None)]``.
HOSTILE = [(a, *attack) for a in ASSIGNMENTS for attack in getattr(designed(a), "HOSTILE", ())]
#: ``[(assignment, name, {answer grade_id: source}, (answer grade_id, extra cell) or None)]``.
HONEST = [(a, *variant) for a in ASSIGNMENTS for variant in getattr(designed(a), "HONEST", ())]


def quarter(k):
    """The k-th of four shares of the course's assignments (k = 0..3), every fourth one in the manifest."""
    return ASSIGNMENTS[k::4]


def build_specs(assignments):
    """Every submission the grading tests need, ``{assignment: {student: notebook}}``."""
    specs = {}
    for assignment in assignments:
        students = {"solution": submission(assignment, {}), "release": read("exercises", assignment)}
        for answer in answer_ids(assignment):
            students[f"no_{answer}"] = submission(assignment, {answer: None})
        for name, answer, old, new, _ in WRONG_ANSWERS[assignment]:
            students[f"wrong_{name}"] = submission(assignment, {answer: (old, new)})
        specs[assignment] = students
    return specs


def score_tests(assignments):
    """The score tests for ``assignments``, for a test module to put in its globals.

    The course is split over four modules (``test_grading_scores_a`` to ``_d``, each a quarter of
    the manifest: :func:`quarter`) so that pytest-xdist's ``--dist loadfile`` grades them on
    several workers at once; each module grades all its submissions in one subprocess (a
    module-scoped fixture), paying nbgrader's start-up once.
    """
    import pytest

    removals = [(a, answer) for a in assignments for answer in answer_ids(a)]
    wrong = [(a, w[0]) for a in assignments for w in WRONG_ANSWERS[a]]

    @pytest.fixture(scope="module")
    def scores(tmp_path_factory):
        return grade_all(build_specs(assignments), tmp_path_factory.mktemp("grading"))

    @pytest.mark.parametrize("assignment", assignments)
    def test_solution_scores_full_marks(scores, assignment):
        assert scores[assignment]["solution"] == expected_scores(assignment, lost=())

    @pytest.mark.parametrize("assignment", assignments)
    def test_untouched_release_scores_zero(scores, assignment):
        assert scores[assignment]["release"] == expected_scores(assignment, lost=points_of_tests(assignment))

    @pytest.mark.parametrize("assignment, answer", removals)
    def test_removing_one_answer_loses_only_its_points(scores, assignment, answer):
        assert tests_of_answer(assignment)[answer], f"answer {answer} has no test cell"
        lost = lost_without(assignment, answer)
        assert scores[assignment][f"no_{answer}"] == expected_scores(assignment, lost)

    @pytest.mark.parametrize("assignment, name", wrong)
    def test_wrong_answer_scores_as_designed(scores, assignment, name):
        (lost,) = [w[4] for w in WRONG_ANSWERS[assignment] if w[0] == name]
        assert scores[assignment][f"wrong_{name}"] == expected_scores(assignment, lost)

    @pytest.mark.parametrize("assignment", assignments)
    def test_at_least_three_wrong_answers(assignment):
        assert len(WRONG_ANSWERS[assignment]) >= 3

    return {name: obj for name, obj in locals().items() if name == "scores" or name.startswith("test_")}


def score_and_reference_tests(assignments):
    """``score_tests(assignments)`` plus the reference-call tests, graded in one batch.

    The ``scores`` fixture returned replaces score_tests' own, so that one nbgrader subprocess grades
    the designed submissions and the reference calls together.
    """
    import re

    import pytest

    from mha_course.course import BASE_HELPERS, COURSE

    tests = score_tests(assignments)

    @pytest.fixture(scope="module")
    def graded(tmp_path_factory):
        specs = build_specs(assignments)
        for assignment in assignments:
            for i, group in enumerate(reference_call_groups(assignment)):
                specs[assignment][f"reference_call_{i}"] = reference_call(assignment, group)
        return grade_all(specs, tmp_path_factory.mktemp("grading"), with_errors=True)

    @pytest.fixture(scope="module")
    def scores(graded):
        return graded[0]

    @pytest.mark.parametrize("assignment", assignments)
    def test_an_answer_that_calls_the_reference_earns_nothing(graded, assignment):
        scores, errors = graded
        for i, group in enumerate(reference_call_groups(assignment)):
            student = f"reference_call_{i}"
            lost = {t for answer in group for t in lost_without(assignment, answer)}
            assert scores[assignment][student] == expected_scores(assignment, lost), group
            for test in lost:
                assert f"is not available in {assignment}" in errors[assignment][student][test], (group, test)

    @pytest.mark.parametrize("assignment", assignments)
    def test_every_answer_has_a_reference_call(assignment):
        """Each answer is in REFERENCE_CALLS, or in NO_REFERENCE (nothing in mha_kit answers it)."""
        covered = set(REFERENCE_CALLS[assignment]) | set(NO_REFERENCE.get(assignment, ()))
        assert covered == set(answer_ids(assignment))
        assert not set(REFERENCE_CALLS[assignment]) & set(NO_REFERENCE.get(assignment, ()))

    @pytest.mark.parametrize("assignment", assignments)
    def test_every_answer_is_written_from_scratch(assignment):
        """The solutions (full marks with the learner edition) call no mha_kit function beyond the allowed helpers."""
        allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
        for cell in read("solutions", assignment).cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                used = set(re.findall(r"\bmk\.(\w+)", cell.source))
                assert used <= allowed, (cell.metadata["nbgrader"]["grade_id"], used - allowed)

    return {**tests, **{name: obj for name, obj in locals().items() if name in ("graded", "scores")
                        or name.startswith("test_")}}


def reference_call(assignment, answers=None):
    """The full solution with the answers of :data:`REFERENCE_CALLS` (all, or those in ``answers``) put in."""
    answers = REFERENCE_CALLS[assignment] if answers is None else answers
    nb = submission(assignment, {})
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = REFERENCE_CALLS[assignment][grade_id]
    return nb


def reference_call_groups(assignment):
    """The answers of :data:`REFERENCE_CALLS` in one notebook: a dependent answer is graded again with the
    solution's earlier answers in place of the failed ones (error carried forward), where its own
    reference call still fails, so every answer's test cells say why they failed."""
    return [tuple(a for a in answer_ids(assignment) if a in REFERENCE_CALLS[assignment])]