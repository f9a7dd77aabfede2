"""The kernel side: what a test cell imports, in the learner's kernel and in the grading kernel alike.

* :mod:`mha_course.kernel.cases` - ``run(question, call, *cases)``: calls the learner's code on a test
  cell's cases and sends the results as plain data (:mod:`mha_course.wire`); warnings of the learner's
  code are caught there, never printed. In the learner's own environment it judges at once.
* :mod:`mha_course.kernel.watch` - arrays a test hands the learner's code that record the calls which
  copy them (04's grouped-query attention without copies).
* :mod:`mha_course.kernel.numpy2` - the numpy 1.x names numpy 2 removed, put back in a grading kernel.

The folder is the rule: a grading kernel's graded kit (:mod:`mha_course.plugins.graded_kit`) and the
browser edition copy it whole (:data:`mha_course.course.KERNEL_SIDE`), so it imports nothing that
holds a reference answer, and nothing but the standard library, numpy, IPython, ``mha_kit``,
:mod:`mha_course.wire` and, in the learner's own environment, the judge (``tests/test_layers.py``).
"""
