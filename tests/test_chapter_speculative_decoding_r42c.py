"""Section speculative_decoding-eagle-metrics: EAGLE's acceptance length, n-alpha and the one-layer draft.

Recomputes, without mha_kit, the draft's weights per pass (one Llama decoder layer of the released Vicuna 7B draft
config, the fc over [embedding; feature], the target's LM head) against Vicuna 7B's, the speed-up tau / (m c + 1)
for the six MT-bench tau of EAGLE issue #9 at the default tree's depth m = 5, and the chain rate alpha that gives
each tau through (1 - alpha^(k+1)) / (1 - alpha) = tau (inverted here with Fractions and a polynomial residual),
and compares them with what the chapter printed and glued; then the section's citations and boxes.
"""
import math
import re
from fractions import Fraction

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("speculative_decoding")
BIB = (chapter_outputs.BOOK.parent / "references.bib").read_text()
LABEL = "speculative_decoding-eagle-metrics"
# EAGLE issue #9, comment of Liyuhui-12 (14 December 2023), MT-bench "compression ratio"
TAU = {"Vicuna 7B": "3.94", "Vicuna 13B": "3.98", "Vicuna 33B": "3.68",
       "LLaMA2-Chat 7B": "3.62", "LLaMA2-Chat 13B": "3.90", "LLaMA2-Chat 70B": "3.80"}
KEYS = {"Vicuna 7B": "v7", "Vicuna 13B": "v13", "Vicuna 33B": "v33",
        "LLaMA2-Chat 7B": "lc7", "LLaMA2-Chat 13B": "lc13", "LLaMA2-Chat 70B": "lc70"}
DEPTH = 5  # mc_sim_7b_63's longest path (eagle/model/choices.py at 2320d52)
D, F, V, L = 4096, 11008, 32000, 32  # eagle/train/vicuna_7B_config.json; Vicuna 7B has 32 such layers
LAYER = D * D * 4 + D * F * 3
DRAFT = LAYER + 2 * D * D + V * D
TARGET = L * LAYER + 2 * V * D
C = Fraction(DRAFT, TARGET)


def glued(key):
    return chapter_outputs.glued(NB, key)


def chain_tokens(alpha, k):
    # 1 + alpha + ... + alpha^k, summed term by term (no closed form, so no shared code path with the chapter)
    return sum(alpha ** i for i in range(k + 1))


def alpha_for(tau, k):
    # the root in (0, 1) of 1 + a + ... + a^k - tau, by exact bisection on Fractions
    low, high = Fraction(0), Fraction(1)
    for _ in range(40):
        mid = (low + high) / 2
        if chain_tokens(mid, k) < tau:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def test_weights_exact():
    assert LAYER == 202_375_168 and DRAFT == 367_001_600 and TARGET == 6_738_149_376
    out = chapter_outputs.printed(NB, "EAGLE_TAU = {")
    assert f"draft pass {DRAFT:,} weights, target step {TARGET:,}: c = {float(C):.4f}" in out
    assert glued("sdem_c") == f"{float(C):.4f}" == "0.0545"
    assert glued("sdem_draft_m") == "367" and glued("sdem_target_b") == "6.74"


@pytest.mark.parametrize("model", list(TAU))
def test_speedup_and_implied_alpha(model):
    tau = Fraction(TAU[model])
    speedup = tau / (DEPTH * C + 1)
    alpha = alpha_for(tau, DEPTH)
    assert abs(chain_tokens(alpha, DEPTH) - tau) < Fraction(1, 10**9)
    key = KEYS[model]
    assert glued(f"sdem_up_{key}") == f"{float(speedup):.2f}"
    assert glued(f"sdem_alpha_{key}") == f"{float(alpha):.3f}"
    line = (f"{model:<16} tau = {float(tau):.2f}: speed-up {float(speedup):.2f}x, "
            f"chain-equivalent alpha at k = {DEPTH}: {float(alpha):.3f}")
    assert line in chapter_outputs.printed(NB, "EAGLE_TAU = {")


def test_prose_values():
    # the two cases the prose and the drill name, and the range the interview box quotes
    assert glued("sdem_up_lc7") == "2.85" and glued("sdem_up_v13") == "3.13"
    ups = [float(glued(f"sdem_up_{k}")) for k in KEYS.values()]
    assert 2.8 <= min(ups) and max(ups) <= 3.15
    flat = " ".join(chapter_outputs.section(NB, LABEL, end="speculative_decoding-eagle3", kinds=("markdown",)).split())
    # the interview box's range: tau / (k c + 1) with a draft pass at 5% of a target step, over the six models
    c5 = Fraction(5, 100)
    rough = [Fraction(t) / (DEPTH * c5 + 1) for t in TAU.values()]
    low, high = (math.floor(10 * x) / 10 for x in (min(rough), max(rough)))
    assert (f"With a draft pass at about {float(c5):.0%} of a target step, τ / ({DEPTH}c + 1) gives roughly "
            f"{low}x to {high}x") in flat
    # the drill's c = 0.05 arithmetic for LLaMA2-Chat 7B
    tau, cost = Fraction(TAU["LLaMA2-Chat 7B"]), DEPTH * c5 + 1
    assert (f"Speed-up $= {TAU['LLaMA2-Chat 7B']} / ({DEPTH} \\times {float(c5)} + 1) = {TAU['LLaMA2-Chat 7B']} / "
            f"{float(cost)} \\approx {float(tau / cost):.1f}$") in flat
    # tau stays below the chain's cap k + 1 and the implied rates rise with tau
    ordered = sorted(TAU, key=lambda m: Fraction(TAU[m]))
    rates = [float(glued(f"sdem_alpha_{KEYS[m]}")) for m in ordered]
    assert rates == sorted(rates) and all(Fraction(t) < DEPTH + 1 for t in TAU.values())



def test_section_citations_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-eagle3", kinds=("markdown",))
    chapter_outputs.assert_cited(text, ("eagleissue9", "eagleissue147", "eagleissue80", "eagleissue180", "eagleissue195", "eagleissue6",
                  "eagleissue32", "eaglecode2320d52", "eaglecode577ad72", "medusacodee2a5d20", "li2024eagle", "li2024eagle2"))
    flat = " ".join(text.split())
    for number in TAU.values():
        assert number in flat, number
    for phrase in ("The acceptance rate of inputting n erroneous features is n-alpha", "accept_length + 1",
                   "second-to-top-layer", "mc_sim_7b_63", "chain_structure", "--tree-choices", "presumably"):
        assert phrase in flat, phrase
    for label in ("speculative_decoding-tokens", "speculative_decoding-walltime", "speculative_decoding-vllm-metrics",
                  "speculative_decoding-eagle3"):
        assert "{ref}`" + label + "`" in text, label
    assert "In the interview" in text and text.count(":class: dropdown") == 2 and "Drill:" in text
    assert text.count("**Strong answer.**") == 2 and text.count("**Trap.**") == 2


def test_alpha_script_cited_at_the_commit_that_has_it():
    # eagle/evaluation/alpha.py does not exist at 2320d52e (11 April 2024); it came with 577ad72 (23 April 2024)
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-eagle3", kinds=("markdown",))
    assert not re.search(r"eaglecode2320d52\{[^}]*evaluation/alpha\.py", text)
    assert re.search(r"eaglecode577ad72\{[^}]*eagle/evaluation/alpha\.py", text)
    entry = re.search(r"@misc\{eaglecode2320d52,.*?\n\}", BIB, re.S).group(0)
    assert "alpha.py is not in this commit" in entry.replace("\\_", "_")
    # EAGLE-1's tau figures come from issue #9, not from EAGLE-2's Table 1
    flat = " ".join(text.split())
    assert "EAGLE-2's own dynamic tree" in flat
