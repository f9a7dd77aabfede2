"""Grading strangers' notebooks inside nbgrader: the rebuild, the sandbox, the limits and the records.

Every way of autograding the course (``nbgrader autograde``, formgrader's Autograde button,
``python -m mha_course.safegrade``) runs the steps that ``nbgrader_config.py`` names:

1. **Nothing from the file is trusted** (:mod:`.structure`, :class:`.structure.RebuildOnRelease`,
   the first sanitizing step). The notebook that runs is the instructor's release with only the
   learner's answer cells (and the learner's own extra cells) put in by ``grade_id``; test cells,
   metadata and checksums come from the release, so editing, deleting, reordering or forging them
   earns nothing, and each change is flagged. safegrade also reads the file outside any kernel
   first (empty, non-UTF-8, not JSON, too large: reported, graded as the blank release).
2. **Each kernel is sandboxed** (:mod:`.execute`, :mod:`.sandbox`): bubblewrap namespaces (no
   network, read-only system and Python, the learner edition of ``mha_kit`` instead of its source,
   no ``solutions/``, no gradebook, no other submission; files are written only to a ``/tmp`` of
   limited size), resource limits and cgroups, a scrubbed environment; the kernel dies with its
   grader. Without bubblewrap the limits still apply and the grader says loudly that files and
   network are not isolated (``"isolation": "limits-only"``).
3. **Answers are judged outside the kernel** (the judge, ``mha_course.judge``): the kernel only
   emits its results as plain data, so nothing a submission patches in its kernel can change a
   verdict, and there is nothing in the kernel to guard.
4. **No submission stops the batch**: the course's time limit per cell (an error naming it), a
   kernel that stops answering is ended within seconds, a dead kernel costs only the cells after
   it, a time budget per notebook and a cap on output.
5. **The records** (:mod:`.records`): flags reach nbgrader's gradebook (*flagged*, *needs manual
   grade*, the reason in a comment); safegrade's results, reports and ``grades.csv``, and the
   course left as ``nbgrader autograde`` leaves it. safegrade grades each submission in a
   throw-away course of its own (:mod:`.worker`) with a pool of workers, resumable.
"""
