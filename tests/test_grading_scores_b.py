"""Autograde the second half of the manifest's assignments that test_grading_scores_c/d do not grade:
full marks, zero, lost answers, wrong answers, and answers that only call the reference they must
write (graded with the learner edition)."""
import grading_support as gs
from grading_support_v2 import ASSIGNMENTS_V2

OWN = tuple(a for a in gs.ASSIGNMENTS if a not in ASSIGNMENTS_V2)  # 07-10 are graded in _c and _d
globals().update(gs.score_and_reference_tests(OWN[(len(OWN) + 1) // 2:]))
