"""Autograde the first half of the course manifest's assignments: full marks, zero, lost answers, wrong answers."""
import grading_support as gs

globals().update(gs.score_tests(gs.ASSIGNMENTS[:(len(gs.ASSIGNMENTS) + 1) // 2]))
