"""Section speculative_decoding-out-of-domain of "Speculative decoding and the KV cache".

Recomputes the section's numbers from Leviathan et al.'s formulas written out here (Eq. (1), expected tokens
as the sum of survival probabilities 1 + alpha + ... + alpha^k; Theorem 3.8, the walltime speed-up
E / (k c + 1)), without mha_kit, and compares them with the stored outputs; checks the marginal rule the
first dropdown states, the section's citations and its dropdown rubrics.
"""
import pathlib
import re

import pytest

import chapter_outputs
from speculative_reference import speedup, tokens

NB = chapter_outputs.notebook("speculative_decoding")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text()
LABEL = "(speculative_decoding-out-of-domain)="
ALPHAS, COSTS = (0.8, 0.5, 0.3), (0.05, 0.2)


def glued(key):
    return chapter_outputs.glued(NB, key)


def best_k(alpha, c):
    return max(range(16), key=lambda k: speedup(alpha, k, c))


def section():
    return chapter_outputs.section(NB, LABEL[1:-2], end="speculative_decoding-code-completion", kinds=("markdown",))


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("c", COSTS)
def test_best_k_and_its_speedup(alpha, c):
    tag = f"{round(100 * alpha)}_{round(100 * c)}"
    assert glued(f"sdood_best_k_{tag}") == str(best_k(alpha, c))
    assert glued(f"sdood_best_up_{tag}") == f"{speedup(alpha, best_k(alpha, c), c):.2f}"


def test_best_k_moves_down_and_the_expected_values():
    # in-domain 0.8 to out-of-domain 0.5 and 0.3: k = 8, 3, 2 (c = 0.05) and 4, 1, 1 (c = 0.2)
    assert [best_k(a, 0.05) for a in ALPHAS] == [8, 3, 2]
    assert [best_k(a, 0.2) for a in ALPHAS] == [4, 1, 1]


def test_the_in_domain_k_loses_out_of_domain():
    fixed = {a: speedup(a, 4, 0.2) for a in ALPHAS}
    for a in ALPHAS:
        assert glued(f"sdood_fixed_{round(100 * a)}") == f"{fixed[a]:.2f}"
    assert fixed[0.8] > 1 > fixed[0.3]
    alpha = next(a / 100 for a in range(1, 100) if speedup(a / 100, 4, 0.2) >= 1)
    assert glued("sdood_break_even") == f"{alpha:.2f}" == "0.46"
    # the exact root of S(alpha) = 1, by scanning a fine grid here (the notebook bisects)
    root = next(a / 100000 for a in range(1, 100000) if speedup(a / 100000, 4, 0.2) >= 1)
    assert glued("sdood_break_even_root") == f"{root:.3f}" == "0.455"


def test_k1_and_k2_tie_at_half_acceptance():
    assert abs(speedup(0.5, 1, 0.2) - speedup(0.5, 2, 0.2)) < 1e-12
    assert glued("sdood_tie_k2_50") == f"{1.75 / 1.4:.2f}" == glued("sdood_best_up_50_20")


def test_printed_table_matches():
    cell = next(c for c in NB["cells"] if "ALPHAS, COSTS, KS" in "".join(c["source"]))
    text = "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("name") == "stdout")
    rows = re.findall(r"alpha = ([0-9.]+):((?:\s+[0-9.]+){7})", text)
    assert len(rows) == 6
    for (a, values), c in zip(rows, [c for c in COSTS for _ in ALPHAS]):
        assert values.split() == [f"{speedup(float(a), k, c):.2f}" for k in range(2, 9)]


def test_free_draft_never_loses_at_batch_1():
    assert glued("sdood_free_30") == f"{tokens(0.3, 4):.2f}"
    assert all(speedup(a, k, 0.0) >= 1 for a in ALPHAS for k in range(16))


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("c", COSTS)
def test_marginal_rule_of_the_dropdown(alpha, c):
    # a (k + 1)-th draft pays exactly when alpha^(k+1) > c * S(k)
    for k in range(12):
        assert (speedup(alpha, k + 1, c) > speedup(alpha, k, c)) == (alpha ** (k + 1) > c * speedup(alpha, k, c))


def test_citations_and_dropdowns():
    text = section()
    for key in ("leviathan2023fast", "hfgenconfigassist", "zhou2024distillspec", "medusareadme", "vllmngram",
                "oliaro2024suffixdecoding", "hfcandgenheuristic", "li2024eagle2", "liu2024osd"):
        assert key in text
        assert re.search(r"@\w+\{" + key + ",", BIB), key
    assert "num_assistant_tokens_schedule" in BIB.replace("\\_", "_")
    assert "max(1.0, self.num_assistant_tokens - 1.0)" in BIB.replace("\\_", "_")
    assert "never below 1" in text and "Only the numerator" in text
    assert text.count(":class: dropdown") == 2
    assert text.count("**Strong answer.**") == text.count("**Listening for.**") == text.count("**Trap.**") == 2
    assert "In the interview" in text
