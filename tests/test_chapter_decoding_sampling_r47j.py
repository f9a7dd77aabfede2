"""Sections decoding_sampling-sampler-by-hand and decoding_sampling-max-new-tokens of "Decoding and sampling",
and the "why a low temperature for code" paragraph before them.

Recomputed without mha_kit and without the chapter's numpy sampler: the nucleus as Holtzman et al. define it
(§3.1: the smallest set of the likeliest tokens whose mass reaches p), grown token by token in plain Python
after a top-k by rank; the probability of the top token at temperature T as 1 / sum_j exp((z_j - z_0) / T);
the length rules from Hugging Face's GenerationConfig (max_length counts the prompt, max_new_tokens does not
and wins, an untouched default of 20 means 20 new tokens), vLLM 0.33.0's get_max_tokens (unset max_tokens is the rest
of the window, more is clamped to it) and the truncation of a list of turns by arithmetic.
"""
import json
import math
import re

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("decoding_sampling")
Z = [4.0, 3.2, 2.5, 1.8, 1.0, 0.3, -0.5, -1.5]
TEMPS = [0.0, 0.7, 1.0, 1.0, 1.3, 1.0]
KS = [12, 5, 40, 12, 3, 12]
PS = [1.0, 0.9, 0.8, 1.0, 0.95, 0.5]


def glued(key):
    return chapter_outputs.glued(NB, key)


def nucleus(row, t, k, p):
    """Kept token ids: top-k by rank, then the smallest prefix (likeliest first) whose mass reaches p."""
    z = [v / (t if t > 0 else 1.0) for v in row]
    ranked = sorted(range(len(z)), key=lambda i: -z[i])[:min(k, len(z))]
    if p >= 1:
        return set(ranked)
    weights = [math.exp(z[i] - z[ranked[0]]) for i in ranked]
    total, mass, kept = sum(weights), 0.0, set()
    for i, w in zip(ranked, weights):
        kept.add(i)
        mass += w / total
        if mass >= p:
            break
    return kept


def test_kept_sets_and_edge_cases():
    batch = np.random.default_rng(47).normal(0.0, 2.0, size=(6, 12)).tolist()  # the chapter's seeded rows
    out = chapter_outputs.printed(NB, "default_rng(47)")
    kept = [len(nucleus(row, t, k, p)) for row, t, k, p in zip(batch, TEMPS, KS, PS)]
    assert json.loads(glued("ds_hand_kept")) == kept == [12, 4, 3, 12, 3, 2]
    assert glued("ds_hand_rows_same") == "6"
    greedy = max(range(12), key=lambda i: batch[0][i])
    assert glued("ds_hand_greedy_tok") == str(greedy)
    for i, (t, k, p, n) in enumerate(zip(TEMPS, KS, PS, kept)):
        assert f"{i:>3} {t:>4} {k:>3} {p:>4} {n:>5} {n:>9}      True" in out, i
    assert out.splitlines()[1].split()[-2:] == [str(greedy), str(greedy)]  # T = 0 returns the argmax
    # the shifted mask keeps the token that crosses p: a row whose top token alone exceeds p keeps exactly it
    assert nucleus([5.0, 0.0, 0.0], 1.0, 3, 0.5) == {0}


def test_top_token_at_low_temperature():
    out = chapter_outputs.printed(NB, "DECISIONS = 50")
    for t, tag in ((1.0, "10"), (0.8, "8"), (0.2, "2")):
        p_top = 1.0 / sum(math.exp((z - Z[0]) / t) for z in Z)
        assert glued(f"ds_code_top_{tag}") == f"{p_top:.3f}"
        assert glued(f"ds_code_one_in_{tag}") == f"{p_top ** -50:.2g}"
        assert f"{t:>4}  {p_top:>15.3f}  {'1 in ' + format(p_top ** -50, '.2g'):>20}" in out
    assert float(glued("ds_code_one_in_10")) > 1e13 > 3 > float(glued("ds_code_one_in_2"))


def test_length_settings():
    out = chapter_outputs.printed(NB, "def hf_new_tokens")
    assert "nothing set:         20 new tokens" in out  # default max_length 20 read as 20 new tokens
    assert glued("ds_len_hf_explicit") == str(100 - 30)
    assert "max_length=20:         refused" in out and "max_new_tokens=256:    256" in out
    assert glued("ds_len_vllm_rest") == f"{8192 - 7000:,}" and "HTTP 400" not in out
    assert glued("ds_len_vllm_clamp") == f"{min(2048, 8192 - 7000):,}" and "max_tokens=2048: 1192 (clamped)" in out
    assert "max_new_tokens=512: 512" in out and "max_tokens=9000: refused" in out and "9000-token prompt: refused" in out
    assert (glued("ds_len_window"), glued("ds_len_reserve"), glued("ds_len_prompt")) == ("8,192", "1,024", "7,000")
    turns = [300, 4000, 3500, 1200]
    budget = 8192 - 1024
    assert glued("ds_len_budget") == f"{budget:,}" and glued("ds_len_history") == f"{sum(turns):,}"
    right = [max(0, min(n, budget - sum(turns[:i]))) for i, n in enumerate(turns)]
    left = list(reversed([max(0, min(n, budget - sum(turns[::-1][:i]))) for i, n in enumerate(turns[::-1])]))
    assert right == [300, 4000, 2868, 0] and left == [0, 2468, 3500, 1200]
    for how, kept in (("truncation right", right), ("truncation left", left), ("drop old turns", [300, 0, 0, 1200])):
        line = next(s for s in out.splitlines() if s.startswith(how))
        assert [int(v) for v in re.findall(r"(?:system|user \d|assistant \d)\s+(\d+)", line)] == kept, how


def test_prose_links_and_cites():
    hand = chapter_outputs.section(NB, "decoding_sampling-sampler-by-hand", end="decoding_sampling-mirostat-typical-cfg")
    chapter_outputs.assert_cited(hand, ["holtzman2020curious", "hftopplogitswarper", "hfgenerationconfiglength",
                                        "vllm033samplingparams"])
    length = chapter_outputs.section(NB, "decoding_sampling-max-new-tokens", end="decoding_sampling-structured-reasoning")
    chapter_outputs.assert_cited(length, ["hfgenerationconfiglength", "hfgeneratedlength", "vllmvalidateinput", "vllm033maxtokens",
                                          "openaimaxcompletiontokens", "hftruncationside", "vllmtruncate"])
    code = chapter_outputs.section(NB, "decoding_sampling-logits-to-token", end="decoding_sampling-sampler-by-hand")
    chapter_outputs.assert_cited(code, ["chen2021codex"])
    assert "0.2" in code and "0.8" in code and "679M" in code
    labels = chapter_outputs.book_labels()
    for text in (hand, length, code):
        for ref in re.findall(r"\{ref\}`([\w.-]+)`", text):
            assert ref in labels, ref
