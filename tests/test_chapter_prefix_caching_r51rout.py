"""Section prefix_caching-rl-rollout-routing (r51rout): the prefill a GRPO group saves on one engine.

Recomputed by enumerating the samples one at a time (the first on an engine prefills the prompt, each later one
reuses all but the last token) rather than by the chapter's closed form, with Llama 3 8B's parameter count taken
from its published shape (32 layers, d 4,096, 8 KV heads of 128, FFN 14,336, vocabulary 128,256, untied).
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")
N, PROMPT, ENGINES = 8, 2_048, 4
D, LAYERS, KV, FFN, VOCAB = 4_096, 32, 8 * 128, 14_336, 128_256
PARAMS = LAYERS * (2 * D * D + 2 * D * KV + 3 * D * FFN + 2 * D) + 2 * VOCAB * D + D


def _prefilled(assignment):
    seen, total = set(), 0
    for engine in assignment:
        total += 1 if engine in seen else PROMPT
        seen.add(engine)
    return total


def test_params():
    assert PARAMS == 8_030_261_248


def test_group_on_one_engine():
    plain, one = N * PROMPT, _prefilled([0] * N)
    assert (plain, one) == (16_384, 2_055)
    glue = chapter_outputs.cell_glue(NB, "RL_N, RL_PROMPT")
    assert glue["pc_rl_plain"] == "16,384" and glue["pc_rl_group"] == "2,055"
    assert glue["pc_rl_saved"] == f"{plain - one:,}" == "14,329"
    assert glue["pc_rl_saved_share"] == f"{1 - one / plain:.1%}" == "87.5%"
    assert glue["pc_rl_saved_tflop_all"] == f"{2 * PARAMS * (plain - one) / 1e12:.0f}" == "230"
    non_embedding = PARAMS - 2 * VOCAB * D  # no input embedding (a lookup), no LM head (last position only)
    assert glue["pc_rl_saved_tflop"] == f"{2 * non_embedding * (plain - one) / 1e12:.0f}" == "200"


def test_dealt_out_and_random():
    dealt = _prefilled([i % ENGINES for i in range(N)])
    assert dealt == 8_196
    glue = chapter_outputs.cell_glue(NB, "RL_N, RL_PROMPT")
    assert glue["pc_rl_dealt_share"] == f"{1 - dealt / (N * PROMPT):.1%}" == "50.0%"
    # a random engine per sample: average the enumeration over all 4^8 assignments
    total = 0
    for code in range(ENGINES ** N):
        total += _prefilled([(code // ENGINES ** i) % ENGINES for i in range(N)])
    mean = total / ENGINES ** N
    out = chapter_outputs.printed(NB, "RL_N, RL_PROMPT")
    row = re.search(r"a random engine per sample \(4\)\s+([\d.]+)\s+([\d,]+)\s+([\d.]+)%", out)
    assert row and row.group(2) == f"{mean:,.0f}" and row.group(3) == f"{100 * (1 - mean / (N * PROMPT)):.1f}"


def test_drill():
    text = chapter_outputs.section(NB, "prefix_caching-rl-rollout-routing", end="prefix_caching-rag-path")
    spread, one = 8 * 6_000 + 8, 6_000 + 15
    assert f"{spread:,}".replace(",", "{,}") in text and f"{one:,}".replace(",", "{,}") in text
    assert f"{spread - one:,}".replace(",", "{,}") in text
    assert f"{8 * 6_000 * 2:,}".replace(",", "{,}") in text


def test_cites_and_links():
    text = chapter_outputs.section(NB, "prefix_caching-rl-rollout-routing", end="prefix_caching-rag-path")
    chapter_outputs.assert_cited(text, ["verlagentloop", "slimerouting", "sglangcacheawarecode", "sglangschedulepolicy"])
    chapter_outputs.assert_links(text, ["serving_operations-rl-rollout", "serving_operations-rl-weight-sync",
                                        "prefix_caching-routing", "attention_cost-flop-split"])
