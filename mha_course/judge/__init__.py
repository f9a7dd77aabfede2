"""The judge: the grading process judges the plain data a test cell sent; the learner's kernel judges at once.

Pure (the standard library, numpy and ``mha_kit``): it runs in the grading process, in the learner's
own kernel and in the browser edition's kernel alike.

* :mod:`mha_course.judge.core` - :func:`~mha_course.judge.core.judge_notebook` and
  :func:`~mha_course.judge.core.first_failure`: a test cell's cases, read from its source, against
  the results the kernel sent (:mod:`mha_course.wire`).
* :mod:`mha_course.judge.diagnoses` - the catalogue of diagnosed mistakes, one message per classic slip.
* :mod:`mha_course.judge.questions` - the registry of the questions, which each assignment's
  ``solutions/<assignment>/grading_questions.py`` fills (the reference and the diagnostic
  messages, with the helpers of :mod:`mha_course.judge.expect`).
* :mod:`mha_course.judge.hints` - when judged at once: the earlier answers a question builds on that
  fail their own tests (when graded, the error is carried forward: :mod:`mha_course.plugins.carry`).

nbgrader runs the judge through :mod:`mha_course.plugins.judge` (``JudgeCells``, ``CarryForward``).
"""
