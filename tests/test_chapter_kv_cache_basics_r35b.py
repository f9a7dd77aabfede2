"""Section kv_cache_basics-exposure-bias of "The KV cache from zero": teacher forcing against free-running.

Recomputed with exact fractions and plain loops over a dictionary, not numpy's matrix product: 16 tokens
in four true cycles of 4, a model table right with probability 19/20 on the trained cycle (the slip spread
over the 15 wrong tokens) and uniform on the 12 tokens it never saw. Also closed forms: the teacher-forced
error is the slip rate at every step; P(no slip in t steps) = (19/20)^t; the share of time off the trained
cycle tends to the two-state fixed point a / (a + b), a = slip-off rate, b = return rate.
"""
from fractions import Fraction as F
from pathlib import Path

import chapter_outputs

V, STEPS = 16, 50
EPS = F(1, 20)
TRAINED = range(4)


def true_next(a):
    return (a // 4) * 4 + (a + 1) % 4


def model(a, b):
    if a in TRAINED:
        return 1 - EPS if b == true_next(a) else EPS / (V - 1)
    return F(1, V)


def free_running():
    dist = {0: F(1)}  # the prompt ends with token 0
    rows = []
    for t in range(1, STEPS + 1):
        wrong = sum(w * (1 - model(a, true_next(a))) for a, w in dist.items())
        nxt = {}
        for a, w in dist.items():
            for b in range(V):
                nxt[b] = nxt.get(b, 0) + w * model(a, b)
        dist = nxt
        off_ref = 1 - dist.get(t % 4, 0)
        off_cycle = sum(w for a, w in dist.items() if a not in TRAINED)
        rows.append((t, off_ref, wrong, off_cycle))
    return rows


ROWS = free_running()


NB = chapter_outputs.notebook("kv_cache_basics")


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_closed_forms():
    assert all(sum(model(a, b) for b in range(V)) == 1 for a in range(V))
    # step 1 starts from the true token, so free-running and teacher-forced agree
    assert ROWS[0][1] == ROWS[0][2] == EPS
    # off the trained cycle after one step: a slip that lands on one of the 12 untrained tokens
    assert ROWS[0][3] == EPS * F(12, 15)
    # stationary share off the cycle: leave at EPS * 12/15, come back at 4/16
    a, b = EPS * F(12, 15), F(4, 16)
    off, wrong = a / (a + b), (1 - a / (a + b)) * EPS + a / (a + b) * F(15, 16)
    assert abs(float(ROWS[-1][3]) - float(off)) < 1e-6  # converges as 0.71^t
    assert abs(float(ROWS[-1][2]) - float(wrong)) < 1e-6
    # the chapter's step-50 values are the fixed point's, to the digits it prints
    assert glued("kb_exp_cycle_50") == f"{float(off):.3f}"
    assert glued("kb_exp_wrong_50") == f"{float(wrong):.3f}"
    assert glued("kb_exp_eps") == f"{float(ROWS[0][2]):.2f}"  # step 1: free-running error equals the slip rate
    # the climb: off the reference strictly increases over the 50 steps
    assert all(x[1] < y[1] for x, y in zip(ROWS, ROWS[1:]))


def test_printed_table():
    out = chapter_outputs.printed(NB, "V, EPS, STEPS")
    for t, off_ref, wrong, off_cycle in ROWS:
        if t in (1, 2, 5, 10, 20, 50):
            line = f"{t:>4}{float(EPS):>16.3f}{float(off_ref):>15.3f}{float(wrong):>18.3f}{float(off_cycle):>17.3f}"
            assert line in out
    assert "P(all 50 right) = 0.077 either way" in out


def test_glued_numbers():
    assert glued("kb_exp_eps") == "0.05"
    assert glued("kb_exp_off_10") == f"{float(ROWS[9][1]):.3f}" == "0.350"
    assert glued("kb_exp_off_50") == f"{float(ROWS[-1][1]):.3f}"
    assert glued("kb_exp_wrong_50") == f"{float(ROWS[-1][2]):.3f}" == "0.172"
    assert glued("kb_exp_cycle_50") == f"{float(ROWS[-1][3]):.3f}"
    assert glued("kb_exp_tf_total") == f"{float(STEPS * EPS):.1f}" == "2.5"
    assert glued("kb_exp_free_total") == f"{float(sum(r[1] for r in ROWS)):.1f}"
    assert glued("kb_exp_all_right") == f"{float((1 - EPS) ** STEPS):.3f}" == "0.077"
    assert float(sum(r[1] for r in ROWS)) > 10 * float(STEPS * EPS)  # the compounding the section claims


def test_section_links_and_sources():
    text = chapter_outputs.section(NB, "kv_cache_basics-exposure-bias", end="kv_cache_basics-architecture-memory",
                                   kinds=("markdown",))
    assert "exposure bias" in text and "teacher forcing" in text and "Scheduled sampling" in text
    for ref in ("kv_cache_basics-training-needs-none", "serving_operations-rlhf-pipeline",
                "serving_operations-rl-rollout"):
        assert f"{{ref}}`{ref}`" in text
    assert ":class: dropdown" in text and "In the interview" in text
    bib = (Path(__file__).resolve().parent.parent / "references.bib").read_text(encoding="utf-8")
    for key in ("bengio2015scheduled", "ranzato2016sequence", "nanogptpretrained", "hfflatteningcollator",
                "ouyang2022instructgpt", "shao2024deepseekmath", "agarwal2024gkd"):
        assert f"{{{key}," in bib
        assert f"{key}{{" in text
    for key in ("bengio2015scheduled", "ranzato2016sequence"):
        entry = bib.split(f"{{{key},", 1)[1].split("\n}", 1)[0]
        assert "Not re-read" not in entry and "read instead:" in entry  # says exactly what was read
    mixer = bib.split("{mixercode,", 1)[1].split("\n}", 1)[0]
    assert "start by training using XENT only" in mixer and "deltasteps" in mixer
    assert "mixercode{" in text and "cross-entropy alone first" in text
    assert "prefills the prompt in one parallel pass" in text  # only decode is token by token
