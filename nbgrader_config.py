"""nbgrader configuration: this repository is an nbgrader course.

* ``solutions/<assignment>/<assignment>.ipynb`` - the source notebooks (answers and hidden tests),
  beside the course's grading files (``grading_questions.py``, ``grading_answers.py``);
* ``exercises/<assignment>/`` - the release, made by ``nbgrader generate_assignment`` and
  committed so learners can open it at once. Never edit it by hand: regenerate it with
  ``.venv/bin/nbgrader generate_assignment --force <assignment>`` (or ``python -m mha_course.release``).
* ``submitted/``, ``autograded/``, ``feedback/`` and ``gradebook.db`` are the instructor's local
  state and are git-ignored.

Every way of autograding (``nbgrader autograde``, formgrader's Autograde button,
``python -m mha_course.safegrade``) runs the steps below: the notebook is rebuilt on the release,
each kernel runs in the sandbox (``mha_course.plugins``) and flags reach the gradebook.

Book: chapter "Instructor's guide".
"""
from mha_course.plugins.api import prepare_environment

c = get_config()  # noqa: F821 (injected by traitlets when nbgrader loads this file)

# nbgrader runs the `alembic` command of the venv that runs it, activated or not.
prepare_environment()

c.CourseDirectory.course_id = "mha-interview"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# An assignment's folder also holds the course's own files (mha_course.course.GRADING_FILES): the
# judge's questions and the tests' designed answers. nbgrader copies every other file of the folder
# into the release and, when autograding, into the folder the learner's kernel runs in: these stay
# out of both (with nbgrader's own defaults).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "grading_*.py"]


# What an unanswered solution cell becomes in the release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# The course's one time limit per cell (safegrade's --timeout defaults to it): a cell that runs
# longer (a learner's endless loop) is stopped, with an error that names the limit.
c.Execute.timeout = 60

# Autograde: the submission is first rebuilt on the release's cells (edited, deleted or forged
# test cells earn nothing and are flagged), then run in a sandboxed kernel that sees the graded
# kit of mha_kit (the helpers the assignment allows). The judge (mha_course.judge): test cells only
# send the learner's results; JudgeCells, right after Execute, compares them with mha_kit's reference
# outside the kernel and turns a failing case into an error output, which SaveAutoGrades scores as
# any failing cell; a warning the learner's code raised is a note of its test, never a failure, and so
# is what it wrote to stderr (StderrNotes: a logging.warning left in a right answer costs nothing).
# CarryForward (error carried forward): a question that builds on an earlier answer that failed its
# own tests, and failed with it, is run once more with the solution's answer in its place (same
# sandbox, same judge); only that question's failed test cells can take the new verdict.
# RecordFlags marks a submission that needs a person "flagged" / "needs manual grade", with why.
c.Autograde.sanitize_preprocessors = [
    "mha_course.plugins.rebuild.RebuildOnRelease",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "mha_course.plugins.execute.SandboxedExecute",
    "mha_course.plugins.judge.JudgeCells",
    "mha_course.plugins.streams.StderrNotes",
    "mha_course.plugins.judge.CarryForward",
    "nbgrader.preprocessors.IgnorePattern",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
    "mha_course.plugins.flags.RecordFlags",
]

# Feedback shows scores and the learner's own code, never the hidden tests: ClearHiddenTests
# strips their source, OneLineErrors strips the tracebacks that would quote it again (each error
# keeps its one line, which says why the cell scored 0). The page loads nothing from the network.
c.GenerateFeedback.exporter_class = "mha_course.plugins.feedback.OfflineHTMLExporter"
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbgrader.preprocessors.ClearHiddenTests",
    "mha_course.plugins.feedback.OneLineErrors",
]
