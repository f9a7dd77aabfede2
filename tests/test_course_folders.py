"""Adding an exercise is one folder in solutions/ plus one entry in the course manifest.

An assignment's folder holds its nbgrader source notebook and the course's grading files
(:data:`mha_course.course.GRADING_FILES`): the judge's questions and the designed answers the tests
grade. Everything else (the judge, the graded kit, the release, the tests, the book's table)
reads the manifest :data:`mha_course.course.COURSE` and the folders. These tests fail when a folder
and the manifest disagree, when a folder's files do not match its notebook, when the grading files
reach the release, or when a file elsewhere lists assignments by name.
"""
from __future__ import annotations

import re
import sys

import nbformat
import pytest

import grading_support as gs
from mha_course.course import ASSIGNMENTS, COURSE, GRADING_FILES, assignment_module
from mha_course.judge.questions import course_questions
from mha_course.notebook import parse_runs

ROOT = gs.ROOT

#: The assignments a file outside the manifest and the folders may name: one example each, used
#: as a worked case (a command's help, a test's fixture, the guide's commands). Adding an
#: assignment changes none of them. Anything else that names an assignment is a second list.
EXAMPLES = {
    "mha_course/check.py": {"03_kv_cache"},  # --help
    "mha_course/selfgrade.py": {"01_shapes", "03_kv_cache"},  # --help and a copy's name
    "mha_course/safegrade.py": {"01_shapes"},  # --help
    "mha_course/plugins/api.py": {"01_shapes"},  # a copy's name, the example in the docstring
    "mha_course/grade/pipeline.py": {"01_shapes"},  # the example in the docstring
    "mha_course/plugins/graded_kit.py": {"01_shapes", "04_implement_attention"},  # a message, a command
    "mha_course/plugins/graded_kit_runtime.py": {"01_shapes"},  # a message, in the docstring
    "mha_course/plugins/README.md": {"01_shapes"},  # commands
    "tests/safegrade_support.py": {"01_shapes", "02_params_compute"},  # the graded one, another one
    "tests/test_claims_c.py": {"05_decoding"},  # the exercise whose stated claims it checks
    "tests/test_site_lite.py": {"11_serving_2026", "12_long_context"},  # judged in the browser edition's page too
    "pyproject.toml": {"07_flash_attention"},  # ruff's per-file rules
    "tests/test_feedback_catalogue.py": {"03_kv_cache", "04_implement_attention", "06_spot_the_bug", "07_flash_attention",
                                         "08_rope", "10_serving", "11_serving_2026"},  # one slip, same words in each
    "tests/test_grading_carry.py": {"04_implement_attention", "08_rope"},  # carried-forward grading; own fault first
    "tests/test_grading_commands.py": {"01_shapes"},  # the smallest notebook
    "tests/test_grading_records.py": {"01_shapes"},  # the smallest notebook
    # issue 36's slips, where the issue found them: 04 blank, 11 and 12 with one slip per question
    "tests/test_grading_slips.py": {"04_implement_attention", "11_serving_2026", "12_long_context"},
    "tests/test_grading_pipeline.py": {"06_spot_the_bug"},
    # issue 37's cases, where the red team found them
    "tests/test_grading_honest_answers_robust_grader.py": {"01_shapes", "04_implement_attention"},
    "tests/test_grading_similarity.py": {"01_shapes", "11_serving_2026"},
    "tests/test_learner_edition_code.py": {"11_serving_2026"},
    # the second reading of 11's Q6 and Q7, where it found them
    "tests/test_grading_fp8_scales_chunked_prefill.py": {"11_serving_2026"},
    "tests/test_grading_old_copy_setup_cell.py": {"11_serving_2026"},
    "tests/test_grading_timeout.py": {"01_shapes"},
    "tests/test_judge.py": {"01_shapes"},
    "tests/test_lab.py": {"01_shapes"},
    "tests/test_graded_kit.py": {"02_params_compute"},
    "tests/test_safegrade_discover.py": {"01_shapes", "02_params_compute"},
    "tests/test_safegrade_rebuild.py": {"01_shapes"},
    "book/exercises.ipynb": {"01_shapes"},  # the checker and the self-grader at work
    "book/instructor_guide.ipynb": {"01_shapes"},  # a grading round
}
#: Where the course's code, tests, tools and book live (the manifest and the folders excepted).
SCANNED = ("mha_course", "tests", "website", "book", "benchmarks")
TOP_FILES = ("Makefile", "nbgrader_config.py", "_toc.yml", "_config.yml", "pyproject.toml")
NAMES = re.compile(r"\b(" + "|".join(map(re.escape, ASSIGNMENTS)) + r")\b")


def _text(path):
    """What a file says: a notebook's cell sources (not its outputs, which code computes), else its text."""
    if path.suffix == ".ipynb":
        return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)
    try:
        return path.read_text()
    except UnicodeDecodeError:
        return ""  # a figure or other binary file


def _scanned_files():
    here = ROOT / "tests" / "test_course_folders.py"  # the exceptions above are declared here
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path != here and not {"__pycache__", ".ipynb_checkpoints"} & set(path.parts):
                yield path
    for name in TOP_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name


def test_no_file_outside_the_manifest_and_the_folders_lists_assignments():
    wrong = {}
    for path in _scanned_files():
        rel = path.relative_to(ROOT).as_posix()
        named = set(NAMES.findall(_text(path))) - EXAMPLES.get(rel, set())
        if rel != "mha_course/course.py" and named:
            wrong[rel] = sorted(named)
    assert wrong == {}, "name assignments only in mha_course/course.py's COURSE and in their folders"


def test_the_examples_are_still_named_where_they_are_excused():
    """An exception no file needs any more is removed, so the list stays the shortest one."""
    for rel, names in EXAMPLES.items():
        assert set(NAMES.findall(_text(ROOT / rel))) == names, rel


def test_the_scan_finds_a_list_of_assignments():
    """The check itself: a file that names a second assignment is caught."""
    assert set(NAMES.findall(f"WRONG = {{{ASSIGNMENTS[0]!r}: [], {ASSIGNMENTS[-1]!r}: []}}")) == \
        {ASSIGNMENTS[0], ASSIGNMENTS[-1]}


def test_every_folder_is_in_the_manifest_and_every_entry_has_its_folder():
    folders = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(COURSE)
    assert sorted(p.name for p in (ROOT / "exercises").iterdir() if p.is_dir()) == sorted(COURSE)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_folder_holds_its_notebook_and_the_grading_files(assignment):
    folder = ROOT / "solutions" / assignment
    for name in (f"{assignment}.ipynb", *GRADING_FILES):
        assert (folder / name).is_file(), f"solutions/{assignment}/{name} is missing"


def test_loading_a_folders_file_names_what_is_wrong(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown assignment '99_nope'; known: "):
        assignment_module("99_nope", "grading_answers")
    with pytest.raises(ValueError, match=r"grading_notes.py is not one of the grading files \("):
        assignment_module(ASSIGNMENTS[0], "grading_notes")
    monkeypatch.setattr("mha_course.course.REPO_ROOT", tmp_path)  # a course whose folder lacks the file
    monkeypatch.delitem(sys.modules, f"_course_{ASSIGNMENTS[0]}_grading_answers", raising=False)
    with pytest.raises(FileNotFoundError, match=f"assignment {ASSIGNMENTS[0]} has no grading_answers.py in "):
        assignment_module(ASSIGNMENTS[0], "grading_answers")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_folders_questions_are_the_ones_its_notebook_asks(assignment):
    """grading_questions.py registers exactly the question ids the notebook's test cells run."""
    asked = {q for c in gs.read("solutions", assignment).cells if c.metadata.get("nbgrader", {}).get("grade")
             for q, _ in parse_runs(c.source)}
    defined = {q for q, spec in course_questions().items()
               if spec.check.__module__ == f"_course_{assignment}_grading_questions"}
    assert defined == asked


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_folders_designed_answers_are_its_notebooks(assignment):
    """Every answer and test cell the designed answers name is one of the notebook's."""
    answers, tests = set(gs.answer_ids(assignment)), set(gs.points_of_tests(assignment))
    asked = {q for c in gs.read("solutions", assignment).cells if c.metadata.get("nbgrader", {}).get("grade")
             for q, _ in parse_runs(c.source)}
    assert set(getattr(gs.designed(assignment), "CHOICE_QUESTIONS", ())) <= asked
    for name, answer, _, _, lost in gs.WRONG_ANSWERS[assignment]:
        assert answer in answers and lost <= tests, name
    assert set(gs.REFERENCE_CALLS[assignment]) | set(gs.NO_REFERENCE[assignment]) <= answers
    for a, name, sources, lost_answers, _ in gs.HOSTILE:
        if a == assignment:
            assert set(sources) | set(lost_answers) <= answers, name


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_release_holds_none_of_the_grading_files(assignment):
    released = {p.name for p in (ROOT / "exercises" / assignment).rglob("*")}
    assert not released & set(GRADING_FILES)


def test_the_readme_says_what_adding_an_exercise_takes():
    """The contributing bullet names the folder's files and the manifest, and no central table."""
    readme = (ROOT / "README.md").read_text()
    bullet = readme[readme.index("- **An exercise.**"):readme.index("- **mha_kit.**")]
    for needed in ("solutions/<assignment>/", "<assignment>.ipynb", *GRADING_FILES, "COURSE", "mha_course/course.py",
                   "python -m mha_course.release"):
        assert needed in bullet, needed
    for central in ("grading_support.py", "judge/questions.py", "test_grading_hostile.py", "safegrade_multi.py"):
        assert central not in bullet, central
