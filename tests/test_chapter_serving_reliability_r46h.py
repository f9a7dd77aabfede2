"""Sections serving_reliability-design-review and serving_reliability-async-jobs (r46h).

The design review places each usual production problem (out of memory, cold start, queueing, under-used GPUs,
rollouts, cost, quality after quantization, monitoring) at a numbered step of the review and links the section
that treats it; the asynchronous backend covers tenants, model routing, observability, cost and its SLO. The
table's step numbers are checked against the numbered list above it, and every link against the book's labels.
"""
import re

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("serving_reliability")

PROBLEMS = {  # problem (start of its row) -> (review steps, labels the row must link)
    "out of memory": ((2, 3), ("deployment_plan-weights-and-cache", "serving_reliability-oom-in-flight")),
    "cold start": ((2, 3), ("multi_tenant_serving-cold-start",)),
    "queueing": ((4,), ("serving_reliability-queue-depth",)),
    "monitoring": ((5,), ("serving_operations-metrics",)),
    "rollouts": ((7,), ("serving_reliability-rollouts",)),
    "quality after quantization": ((7,), ("weight_quantization-quality",)),
    "under-utilised GPUs": ((8, 2, 4), ("serving_operations-gpu-utilisation",)),  # 2 or 4 when TTFT climbs too
    "cost": ((8,), ("deployment_plan-cost-plan",)),
}
STEP_NAMES = {2: "Capacity", 3: "failure modes", 4: "Overload", 5: "Observability", 7: "Change safety",
              8: "Efficiency and cost"}


def review():
    return chapter_outputs.section(NB, "serving_reliability-design-review", end="serving_reliability-api-review-180k")


@pytest.mark.parametrize("problem", PROBLEMS)
def test_each_problem_has_its_step_and_section(problem):
    text = review()
    rows = [line for line in text.splitlines() if line.startswith(f"| {problem}")]
    assert len(rows) == 1, problem
    _, step_cell, where = rows[0].strip("| ").split(" | ")
    steps, labels = PROBLEMS[problem]
    assert [int(s) for s in re.findall(r"\b(\d)\b", step_cell)] == list(steps)
    if problem == "under-utilised GPUs":
        assert "TTFT" in step_cell and "max_num_seqs" in step_cell
    for step in steps:  # the numbered list above names that step
        assert re.search(rf"^{step}\. \*\*[^*]*{STEP_NAMES[step]}", text, re.M | re.I), step
    known = chapter_outputs.book_labels()
    for label in labels:
        assert f"{{ref}}`{label}`" in where and label in known, label


def test_table_order_follows_the_review():
    text = review()
    rows = [line.strip("| ").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    firsts = [int(re.findall(r"\d", step)[0]) for problem, step, _ in rows if problem.split(" (")[0] in PROBLEMS]
    assert len(firsts) == len(PROBLEMS)
    assert firsts == sorted(firsts)


def test_async_backend_covers_the_rest_of_the_question():
    text = chapter_outputs.section(NB, "serving_reliability-async-jobs", end="serving_reliability-ep-failure")
    part = text[text.index("**Tenants, routing, observability, cost, SLOs.**"):]
    for term in ("MessageGroupId", "quiet tenants", "routing key", "retired snapshot", "oldest pending item",
                 "DLQ depth by error type", "trace id", "billed twice", "spend cap", "99% of jobs",
                 "24-hour window", "item success rate", "FIFO queue", "retry GPU-seconds per tenant"):
        assert term in part, term
    assert "tokens a day" not in part  # the linked section's buckets are per minute
    known = chapter_outputs.book_labels()
    for ref in ("multi_tenant_serving-tenancy-design", "multi_tenant_serving-spend-budgets",
                "serving_operations-batch-api", "serving_operations-error-budget"):
        assert f"{{ref}}`{ref}`" in part and ref in known, ref
    chapter_outputs.assert_cited(part, ["awssqsfairqueues"])


def test_review_box_places_the_common_problems():
    text = review()
    box = text[text.index('[H] "Review this inference API design."'):].split("```")[0]
    for term in ("common problems slot in", "OOM and cold start", "queueing under", "quantization quality",
                 "idle", "TTFT"):
        assert term in box, term
