"""Helpers for the nbgrader exercises of the multi-head attention course: each folder says where its code runs.

Lowest first; a module imports only from its own layer or those below (``tests/test_layers.py``):

1. **The ground** - :mod:`mha_course.course` (the manifest of assignments, :data:`~mha_course.course.COURSE`,
   and which of this package's files run in a kernel), :mod:`mha_course.notebook` (the exercise
   notebooks' conventions, on plain dicts: questions, answers, test cells, points, a failed cell's
   one-line reason, notes and flags) and :mod:`mha_course.wire` (the format in which a test cell
   sends its results, spoken by the kernel and the judge alike).
2. **The judge** - :mod:`mha_course.judge`: compares the results with ``mha_kit``'s reference (the
   assignments' questions, the :mod:`~mha_course.judge.expect` helpers, the diagnosed slips); runs in
   the grading process, and at once in the learner's own kernel, the browser's included.
3. **The kernel side** - :mod:`mha_course.kernel`: what a test cell imports (``run``, the watched
   arrays, numpy 1.x names); a grading kernel's graded kit copies this folder, and the wire format, whole.
4. **The plug-ins** - :mod:`mha_course.plugins`: exactly what ``nbgrader_config.py`` names (the rebuild
   on the release, the sandboxed kernel with its graded kit, the judge and error carried forward, the
   notes and flags, the feedback pages) and nbgrader's API on a course folder. The grading design is
   told once, in ``mha_course/plugins/README.md``.
5. **safegrade's batch** - :mod:`mha_course.grade`: the one pipeline (``template``, ``grade``,
   ``Result``), the intake of a class, the pool of workers, the records, the similarity pass.
6. **The commands** - ``python -m mha_course.check`` (visible tests), ``.selfgrade`` (hidden tests
   too, points per question), ``.safegrade`` (a class, in parallel, resumable), ``.release``
   (regenerate ``exercises/``), ``.lab`` (JupyterLab for a learner).

Layers 1 to 3 are pure: they import the standard library, numpy, IPython and ``mha_kit`` only, so the
browser edition packs them as they are (:data:`mha_course.course.BROWSER_SIDE`).

Book: chapters "Exercises" and "Instructor's guide".
"""
