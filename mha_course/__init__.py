"""Helpers for the nbgrader exercises of the multi-head attention course, in layers.

Lowest first; a module imports only from its own layer or those below (``tests/test_layers.py``):

1. **The course** - :mod:`mha_course.course`: the manifest of assignments (:data:`~mha_course.course.COURSE`)
   and nbgrader's Python API on a course folder.
2. **The notebook conventions** - :mod:`mha_course.notebook`: the one reader of the exercise
   notebooks (question headings, answers, test cells, points, a failed cell's one-line reason,
   notes and flags) and of a notebook file.
3. **The judge** - :mod:`mha_course.judge`: a test cell sends the learner's results as plain data
   (:mod:`~mha_course.kernel.cases`, kernel side, in the format of :mod:`~mha_course.wire`);
   the grading process compares them with ``mha_kit`` (:mod:`~mha_course.judge.core`, with the
   assignments' questions and the :mod:`~mha_course.judge.expect` helpers) and carries an error
   forward (:mod:`~mha_course.judge.carry`); :mod:`~mha_course.plugins.judge` plugs both into nbgrader.
4. **What nbgrader_config.py plugs in** - :mod:`mha_course.plugins` (the rebuild on the release,
   the sandboxed kernel with its graded kit of ``mha_kit``, the flags in the gradebook) and
   :mod:`mha_course.plugins.feedback` (feedback pages of one-line errors, offline).
5. **The pipeline** - :mod:`mha_course.grade.pipeline`: ``template(assignment, folder)``,
   ``grade(template, {student: notebook})`` and the :class:`~mha_course.grade.pipeline.Result` of each;
   safegrade's intake (:mod:`~mha_course.grade.intake`), pool of workers (:mod:`~mha_course.grade.pool`) and
   records (:mod:`~mha_course.grade.records`).
6. **The commands** - ``python -m mha_course.check`` (visible tests), ``.selfgrade`` (hidden tests
   too, points per question), ``.safegrade`` (a class, in parallel, resumable), ``.release``
   (regenerate ``exercises/``), ``.lab`` (JupyterLab for a learner).

Book: chapters "Exercises" and "Instructor's guide".
"""
