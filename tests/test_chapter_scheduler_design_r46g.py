"""Section scheduler_design-v0-states: V0's swap-or-recompute rule, the forced-recompute case it does not support,
and late V0's single-sequence groups.

The rule is restated here from vllm/core/scheduler.py (Scheduler._preempt and _preempt_by_recompute's
``assert len(seqs) == 1``), not through mha_kit, and compared with the cell's printed table; then the citations.
"""
import chapter_outputs

NB = chapter_outputs.notebook("scheduler_design")
LABEL = "scheduler_design-v0-states"


def v0_rule(running, forced=None):
    if forced == "recompute" and running != 1:
        return "not supported (assertion in _preempt_by_recompute)"
    return forced or ("recompute" if running == 1 else "swap")


def test_table():
    out = chapter_outputs.printed(NB, "mk.v0_preemption_mode(n, forced)").splitlines()
    rows = [("chat request (n = 1)", 1, None), ("parallel sampling n = 4, to v0.6.3", 4, None),
            ("beam search width 4, to v0.6.2", 4, None), ("n = 4, preemption_mode forced to recompute", 4, "recompute"),
            ("parallel sampling n = 4, after #9302: each child", 1, None)]
    assert out == [f"{label:<47} -> {v0_rule(n, forced)}" for label, n, forced in rows]
    assert "forced to recompute      -> recompute" not in "\n".join(out)


def test_citations():
    text = chapter_outputs.section(NB, LABEL, end="scheduler_design-fairness")
    chapter_outputs.assert_cited(text, ["vllmv0scheduler", "vllmpr9105", "vllmpr9302"])
    assert "len(seqs) == 1" in text and "ParallelSampleSequenceGroup" in text
    # the release of #9302 is not sourced: it must stay hedged, not stated as fact
    assert "Parallel sampling followed in the next release" not in text and "from v0.6.4" not in text
    assert "by our reading" in text and "best_of" in text
