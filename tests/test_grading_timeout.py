"""An answer that never finishes is stopped by ``Execute.timeout`` and the batch goes on.

The course sets ``Execute.timeout = 60``; this test lowers it to 5 seconds to stay fast.
"""
import grading_support as gs

ASSIGNMENT = "01_shapes"


def test_endless_cell_is_stopped_and_grading_goes_on(tmp_path):
    endless = gs.submission(ASSIGNMENT, {})
    (cell,) = [c for c in endless.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer"]
    # endless, but asleep: the five seconds it waits leave the CPU to the other tests
    cell.source = "import time\nwhile True:  # a learner's endless loop\n    time.sleep(0.1)\n" + cell.source
    specs = {ASSIGNMENT: {"endless": endless, "after": gs.submission(ASSIGNMENT, {})}}
    results = gs.grade_all(specs, tmp_path, overrides={"Execute.timeout": 5})[ASSIGNMENT]
    # the interrupted cell never defined head_dim: only its question is lost
    assert gs.scores(results["endless"]) == gs.expected_scores(ASSIGNMENT, lost={"head_dim_transformer_base"})
    assert any("timed out in head_dim_answer (limit 5 s per cell" in text for _, text in results["endless"].flags)
    assert gs.scores(results["after"]) == gs.expected_scores(ASSIGNMENT, lost=())


def test_course_config_sets_the_safeguards():
    text = (gs.ROOT / "nbgrader_config.py").read_text()
    assert "c.Execute.timeout = 60" in text
    assert '"nbgrader.preprocessors.ClearHiddenTests"' in text
    assert '"mha_course.plugins.feedback.OneLineErrors"' in text
