"""Section speculative_decoding-draft-cutoff: llama.cpp's confidence cutoff on drafting (issue #3919).

Recomputes the chapter's toy without mha_kit and without numpy's vector code: the same seeded draws (q = u^(1/3),
so q ~ Beta(3, 1); the target agrees with probability q), walked step by step with plain loops under the 2023 rule
of examples/speculative/speculative.cpp at 8f961ab (stop before the first position whose top-token probability is
under p_accept, or at N; accept = n_accept / n_drafted, n_accept the matches before the first mismatch); the draft
runs min(drafted + 1, N) at c = 0.1 of a target step; and Eq. (1) at alpha' = E[q; q >= t] = 3/4 (1 - t^4),
integrated here numerically. Checks the section's citations and boxes.
"""
import re

import numpy as np
import pytest

import chapter_outputs
from speculative_reference import tokens

NB = chapter_outputs.notebook("speculative_decoding")
BIB = (chapter_outputs.BOOK.parent / "references.bib").read_text()
STEPS, N, C, SEED = 4000, 16, 0.1, 3919
CUTOFFS = (0.0, 0.5, 0.8, 0.95)


def glued(key):
    return chapter_outputs.glued(NB, key)


def _draws():
    rng = np.random.default_rng(SEED)  # the chapter's generator and order of draws
    conf = (rng.random((STEPS, N)) ** (1 / 3)).tolist()
    agree = rng.random((STEPS, N)).tolist()
    return conf, agree


CONF, AGREE = _draws()


def simulate(p_min, n_max, c=C):
    drafted_total = kept_total = no_draft = runs_total = 0
    for conf, agree in zip(CONF, AGREE):
        drafted = 0
        while drafted < n_max and conf[drafted] >= p_min:
            drafted += 1
        kept = 0
        while kept < drafted and agree[kept] < conf[kept]:
            kept += 1
        drafted_total += drafted
        kept_total += kept
        no_draft += drafted == 0
        runs_total += min(drafted + 1, n_max)
    return {"acceptance": kept_total / max(drafted_total, 1), "no draft": no_draft / STEPS,
            "drafted": drafted_total / STEPS, "tokens": 1 + kept_total / STEPS,
            "speed-up": (STEPS + kept_total) / (c * runs_total + STEPS)}


SIM = {t: simulate(t, N) for t in CUTOFFS}


def alpha_eff(t, bins=200_000):
    # E[q 1(q >= t)] for the density 3 q^2, by the midpoint rule: no closed form borrowed from the chapter
    q = t + (np.arange(bins) + 0.5) * (1 - t) / bins
    return float((q * 3 * q**2).sum() * (1 - t) / bins)


@pytest.mark.parametrize("t", CUTOFFS)
def test_table_row(t):
    m, tag = SIM[t], round(100 * t)
    assert glued(f"sddc_acc_{tag}") == f"{m['acceptance']:.0%}"
    assert glued(f"sddc_nodraft_{tag}") == f"{m['no draft']:.0%}"
    assert glued(f"sddc_drafted_{tag}") == f"{m['drafted']:.2f}"
    assert glued(f"sddc_tok_{tag}") == f"{m['tokens']:.2f}"
    assert glued(f"sddc_up_{tag}") == f"{m['speed-up']:.2f}"
    a = alpha_eff(t)
    assert abs(a - 0.75 * (1 - t**4)) < 1e-9
    assert glued(f"sddc_eq1_{tag}") == f"{tokens(a, N):.2f}"
    assert abs(tokens(a, N) - m["tokens"]) < 0.15  # the simulation agrees with Eq. (1) at alpha'


def test_printed_rows():
    text = chapter_outputs.printed(NB, "DC_STEPS, DC_N, DC_C =")
    rows = re.findall(r"p_min ([0-9.]+): acceptance ([0-9.]+), no draft ([0-9.]+), drafted ([0-9.]+), tokens per "
                      r"verification ([0-9.]+) \(Eq\. \(1\) at alpha' = ([0-9.]+): ([0-9.]+)\), speed-up ([0-9.]+)x", text)
    assert [float(r[0]) for r in rows] == list(CUTOFFS)
    for t, acc, nod, dr, tok, a, eq1, up in rows:
        m = SIM[float(t)]
        assert [acc, nod, dr, tok, up] == [f"{m['acceptance']:.3f}", f"{m['no draft']:.3f}", f"{m['drafted']:.2f}",
                                           f"{m['tokens']:.2f}", f"{m['speed-up']:.2f}"]
        assert a == f"{alpha_eff(float(t)):.3f}" and eq1 == f"{tokens(alpha_eff(float(t)), N):.2f}"


def test_the_issue_symptoms():
    acc = [SIM[t]["acceptance"] for t in CUTOFFS]
    tok = [SIM[t]["tokens"] for t in CUTOFFS]
    assert acc == sorted(acc) and tok == sorted(tok, reverse=True)  # rate up, tokens per verification down
    assert SIM[0.95]["acceptance"] > 0.95 and SIM[0.95]["no draft"] > 0.8 and SIM[0.95]["speed-up"] < 1.1
    assert SIM[0.0]["drafted"] == N and SIM[0.0]["no draft"] == 0
    # --draft N barely moves the rate under the 0.8 cutoff, and moves it a lot with no cutoff
    for t in (0.0, 0.8):
        for n in (4, 8, 16):
            assert glued(f"sddc_acc_{round(100 * t)}_n{n}") == f"{simulate(t, n)['acceptance']:.0%}"
    at80 = [simulate(0.8, n)["acceptance"] for n in (4, 8, 16)]
    at0 = [simulate(0.0, n)["acceptance"] for n in (4, 8, 16)]
    assert max(at80) - min(at80) < 0.03 and at0[0] - at0[2] > 0.25
    # the middle cutoff wins at c = 0.1; with a free draft no cutoff wins
    assert max(CUTOFFS, key=lambda t: SIM[t]["speed-up"]) == 0.5
    free0, free50 = simulate(0.0, N, c=0.0)["speed-up"], simulate(0.5, N, c=0.0)["speed-up"]
    assert free0 > free50
    assert (glued("sddc_free_0"), glued("sddc_free_50")) == (f"{free0:.2f}", f"{free50:.2f}")
    assert glued("sddc_steps") == "4,000"


def test_citations_and_boxes():
    text = chapter_outputs.section(NB, "speculative_decoding-draft-cutoff", end="speculative_decoding-draft-choice",
                                   kinds=("markdown",))
    for key in ("llamacppissue3919", "llamacppspec2023", "llamacppspecpmin", "llamacppissue25908", "llamacpppr22506",
                "llamacpppr22673", "llamacpppr14104", "vllmpr16899", "llamacppissue3649"):
        assert re.search(r"`" + key + r"\{[^}]+\}`", text), key  # cited with a locator
        assert re.search(r"@\w+\{" + key + ",", BIB), key
    flat = " ".join(text.split())
    for phrase in ("interferes with the default logic", "so it won't matter if you increase N", "`--draft-p-min`",
                   "hard-coded at 0.80", "do not discard the last drafted token", "0.9 to 0.75", "`-pa 0.0`",
                   "discard last drafted token with low prob", "always incorrectly report 100% acceptance rate",
                   "`--spec-draft-p-min`", "much less penalized compared to CUDA", "bug-unconfirmed",
                   "even at 0.9 acceptance spec is slower", "It depends on what models, parameters and backend you use",
                   "regardless of the request's temperature", "Monte Carlo"):
        assert phrase in flat, phrase
    # the 2025 rule (keep the first token under the cutoff) is history, not the current build (PR #22506)
    assert "is now kept as the draft's last token" not in flat and "now `--draft-p-min`" not in flat
    box = flat[flat.index("In the interview"):]
    assert "`--spec-draft-p-min`" in box and "#22506" in box and box.index("`--spec-draft-p-min`") < box.index(":::")
    for label in ("speculative_decoding-vllm-metrics", "speculative_decoding-scheduler",
                  "speculative_decoding-out-of-domain", "speculative_decoding-walltime"):
        assert "{ref}`" + label + "`" in text, label
    assert "In the interview" in text and text.count(":class: dropdown") == 1
    assert text.count("**Strong answer.**") == 1 and text.count("**Trap.**") == 1
