"""Autograde the second half of the manifest's assignments that test_grading_scores_c/d do not grade:
full marks, zero, lost answers, wrong answers."""
import grading_support as gs
from grading_support_v2 import REFERENCE_CALLS

OWN = tuple(a for a in gs.ASSIGNMENTS if a not in REFERENCE_CALLS)  # 07-10 are graded in _c and _d
globals().update(gs.score_tests(OWN[(len(OWN) + 1) // 2:]))
