"""Grade notebooks as the instructor does: the one pipeline of the self-grader, safegrade and the tests.

>>> course = template("01_shapes", tmp / "course")             # doctest: +SKIP
>>> results = grade(course, {"alice": "alice/01_shapes.ipynb"})  # doctest: +SKIP
>>> results["alice"].total, results["alice"].reasons              # doctest: +SKIP
(5.0, {'head_dim_transformer_base': 'AssertionError: expected head size d_h ... as an int, got float ...'})

* :func:`template` makes a throw-away nbgrader course for one assignment (named after nbgrader's
  verb): its source, its release (``nbgrader generate_assignment``) and a gradebook that knows it;
* :func:`grade` hands each notebook in (:func:`submit`: read outside any kernel, rebuilt on the
  release) and runs nbgrader's ``autograde`` with the course's ``nbgrader_config.py`` (the sandbox,
  the judge, error carried forward, the flags; its ``RebuildOnRelease`` switched off, :data:`REBUILT`:
  the notebook is rebuilt once), then :func:`read_result` reads what it left into a
  :class:`Result`: points per test cell and per question, the one-line reason of each loss, notes,
  flags and a status.

With the environment variable :data:`CACHE_ENV` naming a folder, :func:`template` generates each
release there once, keyed on everything that goes into it (the assignment's folder,
``nbgrader_config.py``, nbgrader's version), and copies it afterwards: the tests set it, so that a
test run generates every release once.

Book: chapters "Exercises" and "Instructor's guide".
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import nbgrader
from nbgrader.api import Gradebook

from ..course import COURSE, REPO_ROOT
from ..notebook import add_flags, failure, first_line, flags_of, grade_id, is_test, notes_of, one_line, points, questions
from ..plugins.api import course_api, load, run_step, solution_notebook
from ..plugins.rebuild import rebuild

#: Environment variable: a folder where :func:`template` keeps every course it generates, for reuse.
CACHE_ENV = "MHA_TEMPLATE_CACHE"
#: The setting :func:`grade` runs autograde with: :func:`submit` rebuilt the notebook on the release
#: already, so nbgrader's own rebuild (the first sanitizing step of ``nbgrader_config.py``) would find
#: nothing to change; a submission is rebuilt once.
REBUILT = {"RebuildOnRelease.enabled": False}
#: What is never copied from an assignment's folder into a course.
_LOCAL = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")


@contextlib.contextmanager
def quiet():
    """nbgrader's and SQLAlchemy's notices (deprecations inside them) are not the caller's concern."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@dataclass(frozen=True)
class Template:
    """A throw-away nbgrader course for one assignment, made by :func:`template`."""

    root: Path  # the course folder: solutions/<a>/, exercises/<a>/ (the release), gradebook.db
    assignment: str

    @property
    def release(self):
        return self.root / "exercises" / self.assignment / f"{self.assignment}.ipynb"

    def submitted(self, student):
        return self.root / "submitted" / student / self.assignment / f"{self.assignment}.ipynb"

    def autograded(self, student):
        return self.root / "autograded" / student / self.assignment / f"{self.assignment}.ipynb"

    def copy(self, folder):
        """The same course, copied to ``folder`` (one per submission: its kernel and gradebook its own)."""
        shutil.copytree(self.root, folder)
        return Template(Path(folder).resolve(), self.assignment)


def template(assignment, folder, gradebook=None):
    """Generate the release of ``assignment`` in a throw-away course at ``folder``; return its :class:`Template`.

    ``gradebook``: the database URL that ``generate_assignment`` records the assignment in (default:
    the course's own ``gradebook.db``).
    """
    if assignment not in COURSE:
        raise ValueError(f"unknown assignment {assignment!r}; the course manifest has {', '.join(COURSE)}")
    root, cache = Path(folder), os.environ.get(CACHE_ENV)
    if cache and gradebook is None:
        cached = Path(cache) / f"{assignment}-{_key(assignment)}"
        if not cached.is_dir():
            Path(cache).mkdir(parents=True, exist_ok=True)
            _store(_generate(assignment, Path(tempfile.mkdtemp(dir=cache)) / "course"), cached)
        shutil.copytree(cached, root, dirs_exist_ok=True)
    else:
        _generate(assignment, root, gradebook)
    return Template(root.resolve(), assignment)


def _generate(assignment, root, gradebook=None):
    shutil.copytree(REPO_ROOT / "solutions" / assignment, root / "solutions" / assignment, ignore=_LOCAL)
    api = course_api(root, **({"CourseDirectory.db_url": gradebook} if gradebook else {}))
    with quiet():
        run_step(api.generate_assignment(assignment, force=True), f"generate_assignment {assignment}")
    return root


def _key(assignment):
    """What a generated course depends on, hashed: the assignment's folder, the course's config, nbgrader."""
    digest, folder = hashlib.sha256(nbgrader.__version__.encode()), REPO_ROOT / "solutions" / assignment
    digest.update((REPO_ROOT / "nbgrader_config.py").read_bytes())
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not {"__pycache__", ".ipynb_checkpoints"}
                       & set(p.relative_to(folder).parts)):
        digest.update(f"\0{path.relative_to(folder).as_posix()}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def _store(built, cached):
    """Move the course ``built`` to ``cached`` in one step; another process may have stored it first."""
    try:
        built.rename(cached)
    except OSError:
        if not cached.is_dir():
            raise
    shutil.rmtree(built.parent, ignore_errors=True)


@dataclass(frozen=True)
class Result:
    """What grading one notebook gave (:func:`read_result`).

    ``scores``: ``{test grade_id: (points, max points)}`` in the notebook's order; ``reasons``: the
    one-line reason of each test cell that lost points; ``notes``: ``{test grade_id: line}`` of what
    changed no score (an error carried forward, a warning); ``flags``: ``((severity, text), ...)``,
    ``"review"`` for what a person must look at, ``"info"`` for what to know; ``questions``:
    ``((label, test grade_ids), ...)`` from the source notebook; ``error``: why the grader itself
    failed on the notebook (then nothing is scored).
    """

    assignment: str
    scores: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    flags: tuple = ()
    questions: tuple = ()
    error: str = ""

    @property
    def total(self):
        return sum(score for score, _ in self.scores.values())

    @property
    def max_total(self):
        return sum(top for _, top in self.scores.values())

    @property
    def review(self):
        """Whether a person must look at it: a flag of severity ``review``."""
        return any(severity == "review" for severity, _ in self.flags)

    @property
    def status(self):
        """``ok``; ``flagged`` (something to know: the score stands); ``review`` (a person must look); ``error``."""
        return "error" if self.error else "review" if self.review else "flagged" if self.flags else "ok"

    def lines(self):
        """Points per question and per test cell; beside a loss its reason, beside a full score its note."""
        out = []
        for label, tests in self.questions:
            scored = [self.scores[t] for t in tests if t in self.scores]
            out.append(f"{label}: {_points(sum(s for s, _ in scored))} / {_points(sum(m for _, m in scored))}")
            for test in (t for t in tests if t in self.scores):
                score, top = self.scores[test]
                # one line each: a warning's text (the learner's) with newlines cannot start a line of its own
                why = f"  <- {one_line(self.reasons[test])}" if test in self.reasons else ""
                why = f"  ({one_line(self.notes[test])})" if not why and test in self.notes else why
                out.append(f"    {test}: {_points(score)} / {_points(top)}{why}")
        return out

    def to_dict(self):
        """The result as JSON data (safegrade's ``results/<student>.json``, with the submission's own fields)."""
        return {"assignment": self.assignment, "status": self.status, "review": self.review,
                "scores": {gid: list(pair) for gid, pair in self.scores.items()}, "total": self.total,
                "max_total": self.max_total, "reasons": self.reasons, "notes": self.notes,
                "flags": [list(flag) for flag in self.flags],
                "questions": [[label, list(tests)] for label, tests in self.questions], "error": self.error}

    @classmethod
    def from_dict(cls, data):
        """The :class:`Result` of :meth:`to_dict`'s data (other keys ignored)."""
        return cls(data.get("assignment", ""), {gid: tuple(pair) for gid, pair in data.get("scores", {}).items()},
                   dict(data.get("reasons", {})), dict(data.get("notes", {})),
                   tuple(tuple(flag) for flag in data.get("flags", ())),
                   tuple((label, tuple(tests)) for label, tests in data.get("questions", ())), data.get("error", ""))


def _points(x):
    return f"{x:g}"


def submit(course, student, path):
    """Hand the notebook at ``path`` in as ``student``; return the flags of its intake.

    The file is read outside any kernel (:func:`mha_course.plugins.api.load`), rebuilt on the release
    (:func:`mha_course.plugins.rebuild.rebuild`, the one rebuild: :func:`grade` switches nbgrader's
    ``RebuildOnRelease`` off) and written where ``nbgrader autograde`` reads it. A file that cannot
    be read as a notebook is graded as the blank release, flagged; one nbformat could not even write
    back (a cell that is a number) is still graded.
    """
    submitted, problem = load(path)
    notebook, changes = rebuild(submitted, nbformat.read(course.release, as_version=4))
    target = course.submitted(student)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return ([("review", f"{problem}: graded as the blank release")] if problem else []) + list(changes)


class AutogradeFailed(RuntimeError):
    """nbgrader's autograde failed: the message is its last error line, ``details`` its log and traceback."""

    def __init__(self, step):
        self.details = f"{step.get('log', '')}\n{step.get('error', '')}"
        errors = [line.strip() for line in self.details.splitlines()
                  if re.match(r"\s*[\w.]*(Error|Exception): ", line) and "Please see the" not in line]
        super().__init__(f"nbgrader autograde failed ({errors[-1] if errors else 'see the log'})")


def grade(course, notebooks, overrides=None, flags=None):
    """Autograde ``{student: notebook path}`` in ``course`` (a :class:`Template`); return ``{student: Result}``.

    ``overrides``: ``{"Section.name": value}`` settings of this grading (``{"Execute.timeout": 5}``);
    ``flags``: ``{student: [(severity, text)]}`` found before grading (a late upload, a link),
    recorded with the others. Raises :class:`AutogradeFailed` when nbgrader fails.
    """
    api, results = course_api(course.root, **{**(overrides or {}), **REBUILT}), {}
    for student, path in notebooks.items():
        found = [*(flags or {}).get(student, ()), *submit(course, student, path)]
        with quiet():
            step = api.autograde(course.assignment, student, force=True)
        if not step.get("success"):
            raise AutogradeFailed(step)
        if found:  # the autograded notebook holds every flag of the submission
            graded = nbformat.read(course.autograded(student), as_version=4)
            add_flags(graded, found)
            nbformat.write(graded, course.autograded(student))
        results[student] = read_result(course, student)
    return results


def read_result(course, student):
    """The :class:`Result` of ``student`` in ``course``: points from its gradebook, reasons, notes and flags
    from the autograded notebook, questions from the source."""
    assignment, graded = course.assignment, nbformat.read(course.autograded(student), as_version=4)
    with quiet(), Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        grades = {g.cell.name: (float(g.score), float(g.max_score))
                  for g in gradebook.find_submission_notebook(assignment, assignment, student).grades}
    origin = solution_notebook(assignment, course.root)
    scores = {gid: grades[gid] for gid in points(origin) if gid in grades}
    cells = {grade_id(c): c for c in graded.cells if is_test(c)}
    reasons = {gid: failure(cells[gid]) or first_line(cells[gid].source)
               for gid, (score, top) in scores.items() if score < top and gid in cells}
    notes = {gid: " ".join(notes_of(cells[gid])) for gid in scores if gid in cells and notes_of(cells[gid])}
    return Result(assignment, scores, reasons, notes, tuple(tuple(f) for f in flags_of(graded)),
                  tuple((q.label, q.tests) for q in questions(origin)))
