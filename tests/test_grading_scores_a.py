"""Autograde assignments 1-3 in a temporary course: full marks, zero, lost answers, wrong answers."""
import grading_support as gs

globals().update(gs.score_tests(("01_shapes", "02_params_compute", "03_kv_cache")))
