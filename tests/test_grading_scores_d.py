"""Autograde assignments 9-10 in a temporary course: full marks, zero, lost answers, wrong answers,
and answers that only call the reference they must write (graded with the learner edition)."""
import grading_support as gs

globals().update(gs.score_and_reference_tests(("09_masks", "10_serving")))
