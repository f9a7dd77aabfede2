"""nbgrader configuration: this repository is an nbgrader course.

* ``solutions/<assignment>/<assignment>.ipynb`` - the source notebooks (answers and hidden tests);
* ``exercises/<assignment>/`` - the release, made by ``nbgrader generate_assignment`` and
  committed so learners can open it at once. Never edit it by hand: regenerate it with
  ``.venv/bin/nbgrader generate_assignment --force <assignment>`` (or ``python -m mha_course.release``).
* ``submitted/``, ``autograded/``, ``feedback/`` and ``gradebook.db`` are the instructor's local
  state and are git-ignored.

Book: chapter "Instructor's guide".
"""
c = get_config()  # noqa: F821 (injected by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "mha-interview"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"


# What an unanswered solution cell becomes in the release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Stop a cell that runs forever (a learner's endless loop) so the batch goes on.
c.Execute.timeout = 60

# Feedback shows scores and the learner's own code, never the hidden tests: ClearHiddenTests
# strips their source, OneLineErrors strips the tracebacks that would quote it again.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbgrader.preprocessors.ClearHiddenTests",
    "mha_course.feedback.OneLineErrors",
]

# The judge (mha_course.judge): test cells only send the learner's results; JudgeCells, right after
# Execute, compares them with mha_kit's reference outside the kernel and turns a failing case into
# an error output, which SaveAutoGrades scores as any failing cell.
c.Autograde.autograde_preprocessors = [
    "nbgrader.preprocessors.Execute",
    "mha_course.judge.JudgeCells",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
