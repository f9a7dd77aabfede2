"""Section serving_reliability-async-jobs of "Overload, failures and rollouts": retries, a DLQ, poison items.

The seeded run of 10,000 items (0.5% transient failures per attempt, 5 poison items, maxReceiveCount 3) is
checked against what the model implies, not rerun: the counts add up to the items, the receives follow from
the counts of each round, the isolated setting lands within four standard deviations of its binomial means with
exactly the poison items in the DLQ, and a crashing poison item can drag at most its batches into the DLQ.
"""
import math

import chapter_outputs

N, POISON, P, BATCH = 10_000, 5, 0.005, 64
NB = chapter_outputs.notebook("serving_reliability")
TABLE = chapter_outputs.printed(NB, "def run_item_queue(")


def rows():
    """{setting: (first, second, third, dlq, innocent, extra percent)} from the printed table."""
    out = {}
    for line in TABLE.splitlines()[2:]:
        *name, first, second, third, dlq, innocent, extra = line.split()
        out[" ".join(name)] = (int(first.replace(",", "")), int(second), int(third), int(dlq), int(innocent),
                               float(extra.rstrip("%")))
    return out


ROWS = rows()
ISO, CRASH, ALONE = (ROWS[k] for k in ("failures stay with their item", "poison crashes its batch of 64",
                                       "same, redelivered items run alone"))


def test_every_item_ends_somewhere():
    for first, second, third, dlq, innocent, _ in ROWS.values():
        assert first + second + third + dlq == N
        assert 0 <= innocent <= dlq


def test_receives_follow_from_the_rounds():
    for first, second, _, _, _, extra in ROWS.values():
        receives = N + (N - first) + (N - first - second)  # round r delivers what failed in round r - 1
        assert f"{100 * (receives - N) / N:.2f}" == f"{extra:.2f}"


def test_isolated_failures_match_the_binomial_model():
    first, second, third, dlq, innocent, _ = ISO
    good = N - POISON
    mean1, sd1 = good * (1 - P), math.sqrt(good * P * (1 - P))
    mean2 = good * P * (1 - P)
    assert abs(first - mean1) < 4 * sd1
    assert abs(second - mean2) < 4 * math.sqrt(mean2)
    assert third <= 2 and dlq == POISON and innocent == 0  # an innocent item fails 3 times with p = 1.25e-7
    assert [chapter_outputs.glued(NB, k) for k in ("sr_aj_first", "sr_aj_second", "sr_aj_third", "sr_aj_dlq")] == \
        [f"{first:,}", str(second), str(third), str(dlq)]
    assert chapter_outputs.glued(NB, "sr_aj_extra") == f"{ISO[5]:.2f}%"


def test_a_crashing_poison_item_drags_its_batch_to_the_dlq():
    _, _, _, dlq, innocent, extra = CRASH
    assert POISON < dlq <= POISON * BATCH + 10  # at most the poison items' last-round batches, plus stragglers
    assert innocent == dlq - POISON and innocent > 0
    assert chapter_outputs.glued(NB, "sr_aj_crash_innocent") == str(innocent)
    assert chapter_outputs.glued(NB, "sr_aj_crash_extra") == f"{extra:.1f}%"
    assert N - CRASH[0] <= POISON * BATCH + 4 * P * N  # round 1 loses at most the poison items' batches


def test_running_retries_alone_keeps_innocents_out():
    assert ALONE[0] == CRASH[0]  # the same first round; only the retries differ
    assert ALONE[3] == POISON and ALONE[4] == 0
    assert chapter_outputs.glued(NB, "sr_aj_alone_dlq") == str(POISON)
    assert ISO[5] < ALONE[5] < CRASH[5]


def test_batch_one_reruns_outweigh_the_first_pass():
    runs = round(N * ALONE[5] / 100)  # every receive past the first runs alone, at batch 1
    assert runs == ALONE[1] + 2 * (ALONE[2] + ALONE[3])  # round 2 delivers 2nd+3rd+DLQ, round 3 3rd+DLQ
    batches = -(-N // BATCH)
    assert chapter_outputs.glued(NB, "sr_aj_alone_runs") == str(runs)
    assert chapter_outputs.glued(NB, "sr_aj_first_batches") == str(batches) == "157"
    assert runs > batches  # even at well under one batch step per single run, isolation costs more than pass one
    assert chapter_outputs.glued(NB, "sr_aj_bisect_levels") == str(BATCH.bit_length() - 1) == "6"
    assert "extra attempts" in TABLE and "extra GPU work" not in TABLE


def test_section_cites_the_dlq_and_links_the_engine_side():
    text = chapter_outputs.section(NB, "serving_reliability-async-jobs", end="serving_reliability-ep-failure")
    for needle in ("awssqsdlq{", "awscdksqsdlq{", "beyer2016sre{ch. 22}", "{ref}`serving_reliability-query-of-death`",
                   "{ref}`scheduler_design-priorities`", "{ref}`serving_operations-batch-api`", "maxReceiveCount",
                   "awssqschangevisibility{", "visibility timeout", "{ref}`deployment_plan-decode-floor`"):
        assert needle in text
