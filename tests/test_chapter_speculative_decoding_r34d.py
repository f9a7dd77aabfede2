"""Sections speculative_decoding-vllm-metrics and speculative_decoding-other-vocab-and-load, and the verify dropdown.

Recomputes vLLM's speculative-decoding metrics without mha_kit: V0's draft acceptance rate (every positive verdict
over the drafted tokens, vllm/spec_decode/metrics.py), its system efficiency (emitted tokens over k + 1 per drafted
sequence), V1's rate (accepted prefix over drafted tokens) and mean acceptance length (1 + accepted prefix per draft,
vllm/v1/spec_decode/metrics.py), for the maintainer's [1, 0, 1, 0] of vLLM issue #9565, the drill's vector and the
chapter's seeded verdicts (the same generator draws, counted here with plain loops); Eq. (1) of Leviathan et al. at
the measured rate; the toy re-tokenization seam; the vLLM blog's factors; and the sections' citations and boxes.
"""
import re
from fractions import Fraction

import numpy as np
import pytest

import chapter_outputs
from speculative_reference import tokens

NB = chapter_outputs.notebook("speculative_decoding")
STEPS, SEED = 4000, 9565


def glued(key):
    return chapter_outputs.glued(NB, key)


def metrics(rows):
    # rows: lists of 0/1 verdicts, one list per step, all of length k
    k = len(rows[0])
    prefixes = []
    for row in rows:
        kept = 0
        while kept < k and row[kept] == 1:
            kept += 1
        prefixes.append(kept)
    drafted = len(rows) * k
    return {"v0": Fraction(sum(sum(r) for r in rows), drafted),
            "eff": Fraction(sum(a + 1 for a in prefixes), len(rows) * (k + 1)),
            "v1": Fraction(sum(prefixes), drafted),
            "len": 1 + Fraction(sum(prefixes), len(rows))}


def simulated():
    rng = np.random.default_rng(SEED)  # the chapter's draws, in the chapter's order
    out = {}
    for alpha in (0.2, 0.5, 0.8):
        for k in (2, 4, 8):
            draws = rng.random((STEPS, k))
            out[alpha, k] = metrics([[1 if x < alpha else 0 for x in row] for row in draws.tolist()])
    return out


SIM = simulated()


def test_thread_example_exact():
    m = metrics([[1, 0, 1, 0]])
    assert (m["v0"], m["eff"], m["v1"], m["len"]) == (Fraction(1, 2), Fraction(2, 5), Fraction(1, 4), 2)
    assert [glued(f"sdvm_thread_{key}") for key in ("v0", "eff", "v1", "len")] == ["0.50", "0.40", "0.25", "2.00"]


def test_drill_exact():
    m = metrics([[1, 1, 0, 1]])
    assert (m["v0"], m["eff"], m["v1"], m["len"]) == (Fraction(3, 4), Fraction(3, 5), Fraction(1, 2), 3)
    assert [glued(f"sdvm_drill_{key}") for key in ("v0", "eff", "v1", "len")] == ["0.75", "0.60", "0.50", "3.00"]


@pytest.mark.parametrize("k", (2, 4, 8))
def test_seeded_metrics_at_half(k):
    m = SIM[0.5, k]
    for key in ("v0", "eff", "v1", "len"):
        assert glued(f"sdvm_{key}_50_k{k}") == f"{float(m[key]):.2f}"
    assert abs(float(m["v0"]) - 0.5) < 0.02  # V0's rate tracks alpha whatever k


def test_claims_the_prose_makes():
    half = [SIM[0.5, k] for k in (2, 4, 8)]
    assert half[0]["eff"] > half[1]["eff"] > half[2]["eff"]  # efficiency falls with k
    assert half[0]["v1"] > half[1]["v1"] > half[2]["v1"]
    assert SIM[0.5, 4]["v0"] > 2 * SIM[0.5, 4]["v1"]  # the V0 rate overstates what reaches the output
    low = SIM[0.2, 4]
    assert low["eff"] > low["v0"]  # the asker's puzzle at low acceptance
    assert glued("sdvm_v0_20_k4") == f"{float(low['v0']):.2f}" and glued("sdvm_eff_20_k4") == f"{float(low['eff']):.2f}"
    assert SIM[0.8, 2]["eff"] > SIM[0.8, 2]["v0"]  # "or k short"
    # Eq. (1) at the measured V0 rate against the measured mean length
    eq1 = tokens(float(SIM[0.5, 4]["v0"]), 4)
    assert glued("sdvm_eq1_50_k4") == f"{eq1:.2f}"
    assert abs(eq1 - float(SIM[0.5, 4]["len"])) < 0.05
    for (alpha, k), m in SIM.items():
        assert m["eff"] * (k + 1) == m["len"]  # V0's emitted tokens per step is the mean acceptance length
    assert glued("sdvm_steps") == "4,000"


def test_printed_rows():
    text = chapter_outputs.printed(NB, "thread = spec_metrics(")
    rows = re.findall(r"alpha ([0-9.]+), k = (\d+): V0 rate ([0-9.]+), V0 efficiency ([0-9.]+), V1 rate ([0-9.]+), "
                      r"mean length ([0-9.]+), Eq\. \(1\) at the V0 rate ([0-9.]+)", text)
    assert len(rows) == 9
    for a, k, v0, eff, v1, length, eq1 in rows:
        m = SIM[float(a), int(k)]
        assert [v0, eff, v1, length] == [f"{float(m[key]):.3f}" for key in ("v0", "eff", "v1", "len")]
        assert eq1 == f"{tokens(float(m['v0']), int(k)):.3f}"


def _longest_match(text, vocab):
    out, i = [], 0
    while i < len(text):
        best = text[i]
        for piece in vocab:
            if text.startswith(piece, i) and len(piece) > len(best):
                best = piece
        out.append(best)
        i += len(best)
    return out


def test_retokenization_seam():
    vocab = ["spec", "ulative", " dec", " decoding", " is"]
    old, new = _longest_match("speculative dec", vocab), _longest_match("speculative decoding is", vocab)
    assert old == ["spec", "ulative", " dec"] and new == ["spec", "ulative", " decoding", " is"]
    keep = 0
    while keep < min(len(old), len(new)) and old[keep] == new[keep]:
        keep += 1
    assert (glued("sdvl_keep"), glued("sdvl_drop"), glued("sdvl_prefill")) == (str(keep), str(len(old) - keep),
                                                                              str(len(new) - keep)) == ("2", "1", "2")


def test_blog_factors():
    assert glued("sdvl_high_sharegpt") == f"{1 / 1.4:.2f}" == "0.71"
    assert glued("sdvl_high_cnn") == f"{1 / 1.8:.2f}" == "0.56"
    text = chapter_outputs.printed(NB, "BLOG_FACTORS = {")
    assert "n-gram, CNN/DailyMail, QPS 1: 2.80x" in text and "draft model, ShareGPT, QPS 1: 1.50x" in text



def test_metrics_section_citations_and_boxes():
    text = chapter_outputs.section(NB, "speculative_decoding-vllm-metrics", end="speculative_decoding-draft-cutoff",
                                   kinds=("markdown",))
    chapter_outputs.assert_cited(text, ("vllmissue9565", "vllmspecmetricsv0", "vllmspecmetricsv1"))
    flat = " ".join(text.split())
    assert "The user will usually see less accepted tokens" in flat
    assert "num_accepted = len(generated_token_ids) - 1" in flat
    assert "never above V0's (equal at $k = 1$" in flat and "drifts mainly because" in flat
    assert "relative to one plain target step" in flat
    assert "{ref}`speculative_decoding-walltime`" in text and "{ref}`speculative_decoding-eagle3`" in text
    assert "In the interview" in text and text.count(":class: dropdown") == 2 and "Drill:" in text
    assert text.count("**Strong answer.**") == 2 and text.count("**Trap.**") == 2


def test_vocab_and_load_section_citations_and_boxes():
    text = chapter_outputs.section(NB, "speculative_decoding-other-vocab-and-load",
                                   end="speculative_decoding-draft-kinds", kinds=("markdown",))
    chapter_outputs.assert_cited(text, ("timor2025heterogeneous", "hfuniversalassisted", "hftransformers525usd", "vllmblogspecdecode2024",
                  "vllmv0specworker"))
    flat = " ".join(text.split())
    # a separate draft always has its own cache; the vocabulary only breaks the position alignment
    assert "A separate draft model always keeps its own KV cache" in flat
    assert "share no token ids" not in flat and "no one-to-one id map" not in flat
    assert "Two models never share a KV cache" in flat
    # greedy -> UAG, sampling -> USD with the pruned-LM-head id table (transformers 5.25.0 _get_candidate_generator)
    for phrase in ("`do_sample=False`", "`do_sample=True`", "UniversalSpeculativeDecodingGenerator",
                   "AssistedCandidateGeneratorDifferentTokenizers", "in the steps where the seam moves"):
        assert phrase in flat, phrase
    for phrase in ("assistant_tokenizer", "AssistantToTargetTranslator", "remove_from_pkv", "turboderp/Qwama-0.5B-Instruct",
                   "speculative_disable_by_batch_size", "4 H100s"):
        assert phrase in flat, phrase
    for label in ("speculative_decoding-walltime", "speculative_decoding-intensity", "speculative_decoding-scheduler"):
        assert "{ref}`" + label + "`" in text, label
    assert "In the interview" in text and text.count(":class: dropdown") == 2 and "Drill:" in text


def test_verify_dropdown():
    text = chapter_outputs.section(NB, "speculative_decoding-verify", kinds=("markdown",))
    assert "Why can't the target just generate $k$ tokens in parallel itself?" in text
    assert "{ref}`kv_cache_basics-training-needs-none`" in text and "{ref}`speculative_decoding-lookahead`" in text
    chapter_outputs.assert_cited(text, ("santilli2023parallel", "cai2024medusa"))
    assert "{ref}`speculative_decoding-mtp-training`" in text and "which is rare on real text" not in text


def test_v1_rate_never_above_v0():
    # the prose: for the same verdicts V1's rate is never above V0's, equal at k = 1 or with no match after a rejection
    import itertools
    for k in (1, 2, 3, 4):
        for row in itertools.product((0, 1), repeat=k):
            m = metrics([list(row)])
            assert m["v1"] <= m["v0"]
            first_zero = row.index(0) if 0 in row else k
            assert (m["v1"] == m["v0"]) == (k == 1 or sum(row[first_zero:]) == 0)
    # the chapter's own numbers obey it: the thread's and the drill's glued rates, and the nine printed rows
    # (k >= 2 at alpha < 1, so a match after a rejection makes V1 strictly lower)
    for case in ("thread", "drill"):
        assert float(glued(f"sdvm_{case}_v1")) < float(glued(f"sdvm_{case}_v0"))
    rows = re.findall(r"k = (\d+): V0 rate ([0-9.]+), V0 efficiency [0-9.]+, V1 rate ([0-9.]+)",
                      chapter_outputs.printed(NB, "thread = spec_metrics("))
    assert len(rows) == 9 and all(int(k) >= 2 and float(v1) < float(v0) for k, v0, v1 in rows)
    flat = " ".join(chapter_outputs.section(NB, "speculative_decoding-vllm-metrics",
                                            end="speculative_decoding-draft-cutoff", kinds=("markdown",)).split())
    assert "never above V0's (equal at $k = 1$" in flat
