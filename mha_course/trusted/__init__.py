"""Grading strangers' notebooks: sandboxed kernels, tamper checks, a resumable parallel batch.

``python -m mha_course.safegrade --assignment NAME SUBMISSIONS`` (see :mod:`mha_course.safegrade`)
grades every submission on top of nbgrader's ``autograde`` and gradebook. The design, in layers:

1. **Nothing from the file is trusted** (:mod:`.structure`). The file is read outside any kernel
   (empty, non-UTF-8, not JSON, another assignment: reported, graded as the blank release). The
   notebook that runs is rebuilt from the instructor's release with only the learner's answer
   cells put in by ``grade_id``; test cells, metadata and checksums come from the source, so
   editing, deleting, reordering or forging them earns nothing, and each change is flagged.
2. **Each kernel is sandboxed** (:mod:`.sandbox`): bubblewrap namespaces (no network, read-only
   system and Python, no ``solutions/``, no gradebook, no other submission; files are written
   only to a ``/tmp`` of limited size), resource limits (memory, CPU
   seconds, file size, and processes counted for the kernel's own user id, with a pids cgroup where
   the machine allows one), a scrubbed environment; the kernel dies with its grading process.
   Without bubblewrap the memory, CPU and file-size limits still apply and the command says loudly
   that files and network are not isolated (``"isolation": "limits-only"`` in every report).
3. **Tests run in a world the grader checks** (:mod:`.guard`): before any learner code, a snapshot
   records the identity of numpy's comparisons, builtins, mha_kit, the test helpers and the
   kernel's error reporting; checks at the start and end of every test cell are compared *outside*
   the kernel. A changed world, or a learner class that subclasses int/ndarray or overrides
   ``__eq__``, zeroes the test cells it touched and flags the submission for manual review.
   Printing "passed" earns nothing: nbgrader scores errors, not output. What the in-kernel checks
   cannot see (code written against the grader itself) needs the interpreter's machinery, which
   the static scan (:func:`.structure.scan`) flags for review.
4. **The batch cannot be stopped by one submission**: per-cell timeout (nbgrader's), a dead
   kernel (``os._exit``, segfault, CPU limit) errors the remaining cells instead of aborting the
   notebook, each submission is graded in its own throw-away nbgrader course by a pool of
   worker processes (a worker that dies is replaced; a submission that kills its worker twice gets an error
   result); a result JSON per submission is written atomically (resume: rerun the same command),
   and only the main process writes the instructor's gradebook (single writer, :mod:`.records`).
"""
