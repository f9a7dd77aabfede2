"""Grading strangers' notebooks inside nbgrader: exactly what ``nbgrader_config.py`` plugs in.

Every way of autograding the course (``nbgrader autograde``, formgrader's Autograde button,
``python -m mha_course.safegrade``) runs these steps:

1. **Nothing from the file is trusted** (:class:`.rebuild.RebuildOnRelease`, the first sanitizing
   step). The notebook that runs is the instructor's release with only the learner's answer cells
   (and the learner's own extra cells) put in by ``grade_id``; test cells, metadata and checksums
   come from the release, so editing, deleting, reordering or forging them earns nothing, and each
   change is flagged.
2. **Each kernel is sandboxed** (:class:`.execute.SandboxedExecute`, :mod:`.sandbox`): bubblewrap
   namespaces (no network, read-only system and Python, the graded kit of ``mha_kit`` instead of
   its source (:mod:`.graded_kit`), no ``solutions/``, no gradebook, no other submission; files are
   written only to a ``/tmp`` of limited size), resource limits and cgroups, a scrubbed
   environment; the kernel dies with its grader. Without bubblewrap the limits still apply and the
   grader says loudly that files and network are not isolated (``"isolation": "limits-only"``).
   No submission stops the batch: the course's time limit per cell (an error naming it), a kernel
   that stops answering is ended within seconds, a dead kernel costs only the cells after it, a
   time budget per notebook and a cap on output.
3. **Answers are judged outside the kernel** (:mod:`mha_course.judge`, the layer below): the kernel
   only emits its results as plain data, so nothing a submission patches in its kernel can change a
   verdict, and there is nothing in the kernel to guard.
4. **Flags reach nbgrader's gradebook** (:class:`.flags.RecordFlags`): *flagged*, *needs manual
   grade*, the reason in a comment.

safegrade, the pipeline above this layer (:mod:`mha_course.grade.pipeline`, :mod:`mha_course.grade.pool`,
:mod:`mha_course.grade.records`), adds a pool of workers, resumable results, reports and ``grades.csv``,
and leaves the course as ``nbgrader autograde`` leaves it.
"""
