"""Autograde assignments 4-6 in a temporary course: full marks, zero, lost answers, wrong answers."""
import grading_support as gs

globals().update(gs.score_tests(("04_implement_attention", "05_decoding", "06_spot_the_bug")))
