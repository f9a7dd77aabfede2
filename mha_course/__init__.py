"""Helpers for the nbgrader exercises of the multi-head attention course.

* :mod:`mha_course.judge` - the judge: a test cell sends the learner's results as plain data
  (``mha_course.judge.cases.run``), the grading process compares them with ``mha_kit``
  (``JudgeCells``, after nbgrader's ``Execute``); each failure says in one line what is wrong.
* :mod:`mha_course.expect` - the judge's assertion helpers ("expected bytes as an int, got float").
* :mod:`mha_course.learner_edition` - the grading kernel's ``mha_kit``: only the helpers an
  assignment allows (the course manifest, :data:`mha_course.course.COURSE`).
* :mod:`mha_course.check` - ``python -m mha_course.check NOTEBOOK``: run the visible tests of one
  notebook and exit non-zero if any fails.
* :mod:`mha_course.selfgrade` - ``python -m mha_course.selfgrade NOTEBOOK``: grade a notebook
  against the hidden tests too, in a throw-away nbgrader course, and print a score per question.
* :mod:`mha_course.feedback` - an nbconvert preprocessor that cuts tracebacks in feedback down to
  their last line, so no hidden-test source reaches the learner.
* :mod:`mha_course.release` - ``python -m mha_course.release``: regenerate ``exercises/`` from
  ``solutions/`` with ``nbgrader generate_assignment``.
* :mod:`mha_course.safegrade` - ``python -m mha_course.safegrade --assignment NAME SUBMISSIONS``:
  grade a class of untrusted notebooks on top of nbgrader, in sandboxed kernels with tamper checks,
  several at once, resumable; a report per submission (design: :mod:`mha_course.trusted`).
* :mod:`mha_course.grading` and :mod:`mha_course.course` - autograde notebooks in a throw-away
  course through nbgrader's Python API (used by the self-grader and the tests).

Book: chapters "Exercises" and "Instructor's guide".
"""
