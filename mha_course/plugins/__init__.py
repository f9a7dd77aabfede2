"""Exactly what ``nbgrader_config.py`` names, and nbgrader's API: the code that runs inside nbgrader.

Every way of autograding the course (``nbgrader autograde``, formgrader's Autograde button,
``python -m mha_course.safegrade``) runs these steps, in this order; why, and what a submission
meets, is told once, in ``mha_course/plugins/README.md``:

* :class:`.rebuild.RebuildOnRelease` - the notebook that runs is the release with the learner's answers in;
* :class:`.execute.SandboxedExecute` - each kernel in a sandbox (:mod:`.sandbox`), with the assignment's
  graded kit (:mod:`.graded_kit`) in place of ``mha_kit``'s source;
* :class:`.judge.JudgeCells` - the judge (:mod:`mha_course.judge`), outside the kernel;
* :class:`.streams.StderrNotes` - what a test wrote to stderr is a note, never a failure;
* :class:`.judge.CarryForward` - error carried forward (:mod:`.carry`);
* :class:`.flags.RecordFlags` - flags reach the gradebook;
* :mod:`.feedback` - feedback pages of one-line errors, offline.

:mod:`.api` runs nbgrader in this process (``course_api``, ``course_config``) and reads notebook
files as nbgrader does (``load``). Everything here imports nbgrader (or nbconvert) at the top: none
of it runs in a kernel.
"""
