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
* :mod:`mha_course.feedback` - feedback pages that cut tracebacks down to their last line (no
  hidden-test source reaches the learner) and load nothing from the network.
* :mod:`mha_course.release` - ``python -m mha_course.release``: regenerate ``exercises/`` from
  ``solutions/`` with ``nbgrader generate_assignment``.
* :mod:`mha_course.trusted` - what ``nbgrader_config.py`` adds to every autograde: the rebuild on
  the release's cells, the sandboxed kernel, the flags in the gradebook.
* :mod:`mha_course.safegrade` - ``python -m mha_course.safegrade --assignment NAME SUBMISSIONS``:
  nbgrader's autograde for a whole class (folders, LMS zips), several at once, resumable; it leaves
  the course as ``nbgrader autograde`` does, plus a report per submission.
* :mod:`mha_course.grading` and :mod:`mha_course.course` - autograde notebooks in a throw-away
  course through nbgrader's Python API (used by the self-grader and the tests).

Book: chapters "Exercises" and "Instructor's guide".
"""
