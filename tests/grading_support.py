"""Shared machinery of the grading tests: build submissions, grade them through the one pipeline.

A *submission* starts from the released notebook (what a learner downloads) with every answer
cell filled from the solutions, then changes some answers: ``None`` keeps the release's stub
(an unanswered question); a ``(old, new)`` pair edits the solution's text (a plausible mistake).
Grading goes through :mod:`mha_course.grade.pipeline` in the test's own process, as the self-grader and
safegrade's workers do; the course's conftest makes each release once per test run
(:data:`mha_course.grade.pipeline.CACHE_ENV`).
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from mha_course import notebook
from mha_course.course import ASSIGNMENTS, COURSE, assignment_module
from mha_course.plugins.carry import _used_by
from mha_course.grade.pipeline import grade, template

ROOT = Path(__file__).resolve().parent.parent


def read(kind, assignment):
    """The notebook of ``assignment`` in ``solutions`` or ``exercises``."""
    return nbformat.read(ROOT / kind / assignment / f"{assignment}.ipynb", as_version=4)


def answer_ids(assignment):
    """grade_ids of the answer (solution) cells, in order."""
    return list(notebook.answers(read("solutions", assignment)))


def points_of_tests(assignment):
    """``{test grade_id: points}`` in notebook order."""
    return notebook.points(read("solutions", assignment))


def tests_of_answer(assignment):
    """``{answer grade_id: [test grade_ids]}``: the test cells after an answer, up to the next answer."""
    return notebook.tests_of(read("solutions", assignment))


def submission(assignment, changes):
    """The release with every answer filled in from the solutions, then ``changes`` applied.

    ``changes`` maps an answer's grade_id to ``None`` (leave the stub) or ``(old, new)`` (replace
    the text ``old`` of the solution by ``new``; ``old`` must occur in it).
    """
    solutions = notebook.answers(read("solutions", assignment))
    nb = read("exercises", assignment)
    for cell in nb.cells:
        grade_id = notebook.grade_id(cell)
        if grade_id not in solutions or changes.get(grade_id, ()) is None:
            continue  # not an answer, or the stub kept
        cell.source = solutions[grade_id]
        if changes.get(grade_id):
            old, new = changes[grade_id]
            if old not in cell.source:
                raise ValueError(f"{old!r} does not occur in the solution of {grade_id}")
            cell.source = cell.source.replace(old, new)
    return nb


def grade_all(specs, workdir, overrides=None):
    """Grade ``{assignment: {student: notebook}}``; return ``{assignment: {student: Result}}``.

    Each assignment is graded in its own course, ``workdir / assignment`` (see :func:`autograded`).
    """
    results = {}
    for assignment, students in specs.items():
        paths = {}
        for student, nb in students.items():
            paths[student] = Path(workdir) / "in" / student / f"{assignment}.ipynb"
            paths[student].parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, paths[student])
        results[assignment] = grade(template(assignment, Path(workdir) / assignment), paths, overrides)
    return results


def autograded(workdir, assignment, student):
    """The autograded notebook :func:`grade_all` left for ``student``."""
    return nbformat.read(Path(workdir) / assignment / "autograded" / student / assignment / f"{assignment}.ipynb",
                         as_version=4)


def scores(result):
    """``{test grade_id: points}`` of a :class:`~mha_course.grade.pipeline.Result`."""
    return {gid: score for gid, (score, _) in result.scores.items()}


def lost_without(assignment, answer):
    """Test cells that score zero when ``answer`` is left blank: its own only. Answers building on it
    (``builds_on`` in the course manifest) are graded with the solution's ``answer`` in its place
    (error carried forward, :mod:`mha_course.plugins.carry`)."""
    return set(tests_of_answer(assignment)[answer])


def expected_scores(assignment, lost):
    """Full marks on every test cell except those in ``lost``, which score zero."""
    return {gid: 0.0 if gid in lost else points for gid, points in points_of_tests(assignment).items()}


def designed(assignment):
    """The module ``solutions/<assignment>/grading_answers.py``: the designed answers the tests grade.

    It defines ``WRONG_ANSWERS``, a list of plausible wrong answers ``(name, answer grade_id, old
    text, new text, test cells that must score zero)`` (every other test cell keeps full marks);
    ``REFERENCE_CALLS``, ``{answer grade_id: source}`` of answers that only call the ``mha_kit``
    reference the question asks the learner to write (graded with the graded kit, each earns
    nothing for the test cells it feeds); ``NO_REFERENCE``, ``{answer grade_id: why}`` of the
    answers no ``mha_kit`` function answers; optionally ``HOSTILE`` and ``HONEST``
    (``test_grading_hostile``).
    """
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


def designed_changes(assignment):
    """Every designed one-answer change of ``assignment``: ``[(label, answer grade_id, change, lost test cells)]``.

    ``no_<answer>`` leaves that answer's stub (it loses its own test cells: :func:`lost_without`);
    ``wrong_<name>`` is a :data:`WRONG_ANSWERS` entry (it loses the cells the entry lists).
    """
    removals = [(f"no_{a}", a, None, lost_without(assignment, a)) for a in answer_ids(assignment)]
    return removals + [(f"wrong_{name}", answer, (old, new), set(lost))
                       for name, answer, old, new, lost in WRONG_ANSWERS[assignment]]


def _related(assignment, one, other):
    """Whether two answers are the same or one builds on the other, directly or through another answer."""
    builds_on = COURSE[assignment].builds_on
    return one == other or one in _used_by(other, builds_on) or other in _used_by(one, builds_on)


def packed(assignment):
    """:func:`designed_changes` packed into as few submissions as possible: ``[[change, ...], ...]``.

    A submission holds at most one change per answer, and never two changes to answers one of which
    builds on the other: each answer is graded on its own (error carried forward gives an unchanged
    answer its points when an earlier one it calls is wrong), so a packed submission must score the
    full marks less the union of its changes' lost cells, exactly as its changes one at a time would.
    Each submission is a kernel start and a grading run: packing halves the score tests' cost.
    First fit, in :func:`designed_changes`' order, so the packing is the same on every run.
    """
    packs = []
    for change in designed_changes(assignment):
        pack = next((p for p in packs if not any(_related(assignment, change[1], c[1]) for c in p)), None)
        if pack is None:
            pack = []
            packs.append(pack)
        pack.append(change)
    return packs


def pack_of(assignment, label):
    """``(student name, the changes packed with ``label``'s)`` in :func:`build_specs`' submissions."""
    (found,) = [(f"pack_{i}", pack) for i, pack in enumerate(packed(assignment)) if label in [c[0] for c in pack]]
    return found


def build_specs(assignments):
    """Every submission the score tests grade, ``{assignment: {student: notebook}}``: the solution, the
    release, the designed changes packed (:func:`packed`) and the reference calls."""
    specs = {}
    for assignment in assignments:
        students = {"solution": submission(assignment, {}), "release": read("exercises", assignment)}
        for i, pack in enumerate(packed(assignment)):
            students[f"pack_{i}"] = submission(assignment, {answer: change for _, answer, change, _ in pack})
        for i, group in enumerate(reference_call_groups(assignment)):
            students[f"reference_call_{i}"] = reference_call(assignment, group)
        specs[assignment] = students
    return specs


def distinct(specs):
    """``(specs without a notebook identical to one before it, {assignment: {that student: the first}})``.

    The pack of every removal (each answer blanked) is the release itself for most assignments:
    grading the same notebook twice tells nothing more (9 of the score tests' 84 submissions).
    """
    unique, same = {}, {}
    for assignment, students in specs.items():
        first = {}
        for student, nb in students.items():
            text = nbformat.writes(nb)
            if text in first:
                same.setdefault(assignment, {})[student] = first[text]
            else:
                first[text] = student
                unique.setdefault(assignment, {})[student] = nb
    return unique, same


def packed_scores(graded, assignment, label):
    """``(the scores of the submission that holds ``label``'s change, the scores it must have)``."""
    student, pack = pack_of(assignment, label)
    lost = set().union(*(c[3] for c in pack))
    return scores(graded[assignment][student]), expected_scores(assignment, lost)


def score_tests(assignments):
    """The score tests for ``assignments``, for a test module to put in its globals.

    The course is split over four modules (``test_grading_scores_a`` to ``_d``, each a quarter of
    the manifest: :func:`quarter`) so that pytest-xdist's ``--dist loadfile`` grades them on
    several workers at once; each module grades all its submissions once (a module-scoped fixture):
    the designed ones and the reference calls.
    """
    import re

    import pytest

    from mha_course.course import BASE_HELPERS
    from mha_course.selfgrade import print_report

    removals = [(a, answer) for a in assignments for answer in answer_ids(a)]
    wrong = [(a, w[0]) for a in assignments for w in WRONG_ANSWERS[a]]

    @pytest.fixture(scope="module")
    def graded(tmp_path_factory):
        unique, same = distinct(build_specs(assignments))
        results = grade_all(unique, tmp_path_factory.mktemp("grading"))
        for assignment, twins in same.items():
            results[assignment].update({student: results[assignment][first] for student, first in twins.items()})
        return results

    @pytest.mark.parametrize("assignment", assignments)
    def test_solution_scores_full_marks(graded, assignment):
        assert scores(graded[assignment]["solution"]) == expected_scores(assignment, lost=())

    @pytest.mark.parametrize("assignment", assignments)
    def test_untouched_release_scores_zero(graded, assignment):
        assert scores(graded[assignment]["release"]) == expected_scores(assignment, lost=points_of_tests(assignment))

    @pytest.mark.parametrize("assignment, answer", removals)
    def test_removing_one_answer_loses_only_its_points(graded, assignment, answer):
        assert tests_of_answer(assignment)[answer], f"answer {answer} has no test cell"
        got, expected = packed_scores(graded, assignment, f"no_{answer}")
        assert got == expected, [c[0] for c in pack_of(assignment, f"no_{answer}")[1]]

    @pytest.mark.parametrize("assignment, name", wrong)
    def test_wrong_answer_scores_as_designed(graded, assignment, name):
        got, expected = packed_scores(graded, assignment, f"wrong_{name}")
        assert got == expected, [c[0] for c in pack_of(assignment, f"wrong_{name}")[1]]

    @pytest.mark.parametrize("assignment", assignments)
    def test_packed_changes_are_independent(assignment):
        """No two changes of a packed submission touch one answer or a pair where one builds on the other."""
        for pack in packed(assignment):
            answers = [c[1] for c in pack]
            assert not [(x, y) for i, x in enumerate(answers) for y in answers[i + 1:] if _related(assignment, x, y)]
        assert sorted(c[0] for p in packed(assignment) for c in p) == sorted(c[0] for c in designed_changes(assignment))

    @pytest.mark.parametrize("assignment", assignments)
    def test_an_honest_submission_is_never_flagged(graded, assignment):
        """Blank, wrong, partial or calling a switched-off reference: a score, status ok, no flag."""
        for student, result in graded[assignment].items():
            assert (result.status, result.flags) == ("ok", ()), student

    @pytest.mark.parametrize("assignment", assignments)
    def test_the_self_graders_report_shows_every_points_and_reason(graded, assignment, capsys):
        """selfgrade prints the pipeline's Result: each test cell's points, each loss with its reason."""
        student, pack = pack_of(assignment, f"wrong_{WRONG_ANSWERS[assignment][0][0]}")
        result, lost = graded[assignment][student], set().union(*(c[3] for c in pack))
        assert print_report(result) == (result.total, result.max_total)
        report = capsys.readouterr().out
        for test, points in expected_scores(assignment, lost).items():
            line = f"    {test}: {points:g} / {points_of_tests(assignment)[test]:g}"
            note = f"  ({result.notes[test]})" if test in result.notes else ""  # a full score's note
            assert line + (f"  <- {result.reasons[test]}" if test in lost else note) in report.splitlines(), report
        assert f"Total: {result.total:g} / {result.max_total:g}" in report

    @pytest.mark.parametrize("assignment", assignments)
    def test_at_least_three_wrong_answers(assignment):
        assert len(WRONG_ANSWERS[assignment]) >= 3

    @pytest.mark.parametrize("assignment", assignments)
    def test_an_answer_that_calls_the_reference_earns_nothing(graded, assignment):
        for i, group in enumerate(reference_call_groups(assignment)):
            result = graded[assignment][f"reference_call_{i}"]
            lost = {t for answer in group for t in lost_without(assignment, answer)}
            assert scores(result) == expected_scores(assignment, lost), group
            for test in lost:
                assert f"is not available in {assignment}" in result.reasons[test], (group, test)

    @pytest.mark.parametrize("assignment", assignments)
    def test_every_answer_has_a_reference_call(assignment):
        """Each answer is in REFERENCE_CALLS, or in NO_REFERENCE (nothing in mha_kit answers it)."""
        covered = set(REFERENCE_CALLS[assignment]) | set(NO_REFERENCE.get(assignment, ()))
        assert covered == set(answer_ids(assignment))
        assert not set(REFERENCE_CALLS[assignment]) & set(NO_REFERENCE.get(assignment, ()))

    @pytest.mark.parametrize("assignment", assignments)
    def test_every_answer_is_written_from_scratch(assignment):
        """The solutions (full marks with the graded kit) call no mha_kit function beyond the allowed helpers."""
        allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
        for grade_id, source in notebook.answers(read("solutions", assignment)).items():
            used = set(re.findall(r"\bmk\.(\w+)", source))
            assert used <= allowed, (grade_id, used - allowed)

    return {name: obj for name, obj in locals().items() if name == "graded" or name.startswith("test_")}


def reference_call(assignment, answers=None):
    """The full solution with the answers of :data:`REFERENCE_CALLS` (all, or those in ``answers``) put in."""
    answers = REFERENCE_CALLS[assignment] if answers is None else answers
    nb = submission(assignment, {})
    for cell in nb.cells:
        if notebook.grade_id(cell) in answers:
            cell.source = REFERENCE_CALLS[assignment][notebook.grade_id(cell)]
    return nb


def reference_call_groups(assignment):
    """The answers of :data:`REFERENCE_CALLS` in one notebook: a dependent answer is graded again with the
    solution's earlier answers in place of the failed ones (error carried forward), where its own
    reference call still fails, so every answer's test cells say why they failed."""
    return [tuple(a for a in answer_ids(assignment) if a in REFERENCE_CALLS[assignment])]
