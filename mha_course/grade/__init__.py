"""safegrade's batch: the one grading pipeline, and what a class of submissions needs around it.

* :mod:`mha_course.grade.pipeline` - ``template(assignment, folder)``, ``grade(template, {student:
  notebook})`` and the :class:`~mha_course.grade.pipeline.Result` of each: nbgrader's autograde with
  the course's ``nbgrader_config.py`` (:mod:`mha_course.plugins`);
* :mod:`mha_course.grade.intake` - a class's submissions found in a folder, an LMS download or a zip;
* :mod:`mha_course.grade.pool` - the workers, each grading one submission at a time;
* :mod:`mha_course.grade.records` - reports, ``grades.csv`` and the instructor's gradebook;
* :mod:`mha_course.grade.similarity` - answers a class shares, and code a learner can read.
"""
