"""The judge: a test cell sends the learner's results as plain data, the grading process judges them.

* :mod:`mha_course.judge.cases` - kernel side: ``run(question, call, *cases)``; warnings of the
  learner's code are caught there, never printed (imports nothing that holds a reference answer:
  it goes into the grading kernel's graded kit as it is, with :mod:`~mha_course.judge.wire`).
* :mod:`mha_course.judge.wire` - how the results travel: the encoding and its decoding.
* :mod:`mha_course.judge.watch` - kernel side too: arrays a test hands the learner's code that
  record the calls which copy them (04's grouped-query attention without copies).
* :mod:`mha_course.judge.core` - grading side: :func:`~mha_course.judge.core.judge_notebook`.
* :mod:`mha_course.judge.diagnoses` - the catalogue of diagnosed mistakes, one message per classic slip.
* :mod:`mha_course.judge.questions` - the registry of the questions, which each assignment's
  ``solutions/<assignment>/grading_questions.py`` fills (the reference and the diagnostic
  messages, with the helpers of :mod:`mha_course.judge.expect`).
* :mod:`mha_course.judge.carry` - error carried forward: a question that builds on a failed
  earlier answer is graded again with the solution's answer there.
* :mod:`mha_course.judge.preprocessor` - ``JudgeCells`` and ``CarryForward``, the nbgrader
  preprocessors of ``nbgrader_config.py``, right after the executor.
"""
