"""Autograde assignments 9-10 in a temporary course: full marks, zero, lost answers, wrong answers,
and answers that only call the reference they must write (graded with the learner edition)."""
import grading_support_v2 as v2

globals().update(v2.score_and_reference_tests(("09_masks", "10_serving")))
