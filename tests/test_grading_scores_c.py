"""Autograde a quarter of the manifest's assignments (every fourth, from the 3rd) in a temporary
course: full marks, zero, lost answers, wrong answers, and answers that only call the reference they
must write (graded with the graded kit)."""
import grading_support as gs

globals().update(gs.score_tests(gs.quarter(2)))
