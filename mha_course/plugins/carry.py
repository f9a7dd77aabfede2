"""Error carried forward, the grading half: a later answer is not zeroed by a mistake in an earlier answer it builds on.

A question that calls the learner's own earlier answers (``builds_on`` in the course manifest,
:data:`mha_course.course.COURSE`) fails with them: a wrong ``softmax`` also fails multi-head
attention written on top of it. :class:`~mha_course.plugins.judge.CarryForward`, the step
after the judge in ``nbgrader_config.py``, grades such a question again, the way a teacher
carries an error forward:

1. :func:`plan` reads the judged notebook: a *dependent* answer D qualifies when one of its test
   cells failed, an answer it builds on failed one of its own test cells (wrong, blank, raising,
   or calling a switched-off reference), and D itself is answered (a blank D fails anyway). The
   failed dependencies that do not qualify themselves are *substituted*; one that qualifies (it
   builds on a failed answer in turn) keeps the learner's code, since it is graded again too. So
   two mistakes in a chain (a wrong ``softmax`` and a wrong ``attention``) still cost multi-head
   attention its points: one extra run cannot grade ``attention`` and replace it at once.
2. :func:`substituted_copy`: a copy of the notebook in which the substituted answer cells carry the
   solution's source, read here, by the grading process, from ``solutions/`` (never written where
   the primary kernel can reach it).
3. The copy runs in the same sandboxed executor (graded kit, limits) and is judged by the same
   judge: one extra run per notebook at most, none when nothing qualifies.
4. :func:`carry_forward`: a test cell of a qualifying D that failed in the primary run and passes in
   the copy gets its points; its output becomes one note that says which earlier answers were
   replaced. Nothing else is taken from the copy: no other cell's grade, no output (what the
   learner's code printed there could quote the solution).

A wrong, blank or forbidden D still fails in the copy, so it still scores zero; the substituted
answers' own test cells keep their primary failures. When D's failure in the copy differs from its
failure beside the learner's earlier answers, its own fault is reported first (:func:`own_fault`):
08's rotary attention with a forbidden ``rope`` and its own scale slip says "the scores' scale is
wrong ...; your rope fails its own test: fix it first". Those words are fixed ones: the catalogue's
message for the diagnosis the judge found in the copy (:func:`~mha_course.notebook.diagnosis_of`),
or a sentence that says D fails there too; never text from the copy's run.

The learner's own kernel has the other half (:mod:`mha_course.judge.hints`): a test cell judged at once
names the earlier answers that fail their own tests.
"""
from __future__ import annotations

import copy

from nbgrader.utils import compute_checksum

from ..judge.core import error_output
from ..judge.diagnoses import CATALOGUE
from ..judge.hints import fix_first, listed, name_of
from ..notebook import add_note, diagnosis_of, failure, first_error, grade_id, is_answer, meta, test_cells


def unanswered(nb):
    """grade_ids of the answer cells still as released (nbgrader's checksum of the stub unchanged)."""
    return {grade_id(c) for c in nb.cells if is_answer(c) and meta(c).get("checksum") == compute_checksum(c)}


def _failed(cell):
    return failure(cell) is not None


def plan(nb, builds_on, blank=frozenset()):
    """``(substituted answers, {dependent answer: [indices of its failed test cells]})``; both empty when
    nothing qualifies. ``builds_on`` is the assignment's ``{answer: (answers it calls)}``; a dependent
    in ``blank`` (unanswered) fails in any copy, so it is not graded again (and its answer may be substituted)."""
    tests = test_cells(nb)
    failing = {answer for answer, cells in tests.items() if any(_failed(nb.cells[i]) for i in cells)}
    qualifying = {d for d, used in builds_on.items() if d in failing and d not in blank and failing & set(used)}
    substituted = {a for d in qualifying for a in builds_on[d] if a in failing} - qualifying
    if not substituted:
        return set(), {}
    return substituted, {d: [i for i in tests[d] if _failed(nb.cells[i])] for d in sorted(qualifying)}


def substituted_copy(nb, substituted, solutions):
    """A copy of ``nb``, outputs cleared, whose answer cells in ``substituted`` carry ``solutions``' source."""
    twin = copy.deepcopy(nb)
    for cell in twin.cells:
        if cell.get("cell_type") != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        if is_answer(cell) and grade_id(cell) in substituted:
            cell.source = solutions[grade_id(cell)]
    return twin


def note(substituted):
    """The one-line note of a carried-forward test cell, in place of its failure."""
    names = listed(sorted(name_of(a) for a in substituted))
    which = "which" if len(substituted) == 1 else "each of which"
    return f"Graded with a correct {names} in place of yours, {which} failed its own test (error carried forward)."


def _used_by(answer, builds_on):
    """The answers ``answer`` builds on, directly or through another answer."""
    used, todo = set(), [answer]
    while todo:
        for other in builds_on.get(todo.pop(), ()):
            if other not in used:
                used.add(other)
                todo.append(other)
    return used


def carry_forward(nb, twin, substituted, regrade, builds_on):
    """Give the failed test cells in ``regrade`` that pass in ``twin`` their points; return their indices.

    A cell that fails in ``twin`` too keeps its score (zero) and, when its failure there differs from
    its own, gets its own fault first (:func:`own_fault`).
    """
    carried = []
    for dependent, indices in regrade.items():
        used = substituted & _used_by(dependent, builds_on) or substituted
        for index in indices:
            cell, again = nb.cells[index], twin.cells[index]
            if again.get("source") != cell.get("source"):
                continue
            if _failed(again):
                if first_error(again) != first_error(cell):  # the same failure: it already names its own fault
                    _put_first(cell, own_fault(diagnosis_of(again), used))
                continue
            cell.outputs = []
            add_note(cell, note(used))
            carried.append(index)
    return carried


def own_fault(diagnosis, substituted):
    """The reason of a dependent's test cell that fails with correct earlier answers in place too.

    Fixed words only, never text from the copy's run (the learner's code ran there beside the
    solution's source and could quote it): the catalogue's message for the ``diagnosis`` the judge
    found in the copy, or a sentence that says so; then the earlier answers that failed their own tests.
    """
    names = sorted(name_of(a) for a in substituted)
    which = f"a correct {names[0]} in place of yours" if len(names) == 1 else "correct earlier answers"
    own = CATALOGUE[diagnosis].message if diagnosis in CATALOGUE else f"it also fails with {which}: look at your own code first"
    return f"{own}; {fix_first(names)}"


def _put_first(cell, reason):
    """Put an ``AssertionError`` with ``reason`` first among the cell's outputs: the reason it scores zero."""
    cell.setdefault("outputs", []).insert(0, error_output(cell, "AssertionError", reason))
