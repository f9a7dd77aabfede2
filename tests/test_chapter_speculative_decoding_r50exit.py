"""Section speculative_decoding-early-exit-vs-small: early exit in Llama 3 70B against Llama 3 8B.

Recomputes, without mha_kit, from the two models' config.json shapes: the expected deepest exit of b
independent tokens (exits after layers 20/40/60/80 taken by 40/30/20/10% of tokens) as exact fractions,
the weights a decode step reads (the layers run plus the output head) against the full 70B, the 8B's
share, the bf16 weights and the cache tokens left beside them on two H100s and on one, and the H100's
ridge point; compares them with the cell's printed table and glued values, and checks the links and
citations.
"""
from fractions import Fraction

import chapter_outputs

NB = chapter_outputs.notebook("speculative_decoding")
LABEL = "speculative_decoding-early-exit-vs-small"
MARKER = "ee_big, ee_small ="
EXITS, SHARES = (20, 40, 60, 80), (Fraction(4, 10), Fraction(3, 10), Fraction(2, 10), Fraction(1, 10))
# config.json: (layers, d_model, d_ff, query heads, KV heads, head dim, vocabulary)
SHAPE = {"70b": (80, 8192, 28672, 64, 8, 128, 128256), "8b": (32, 4096, 14336, 32, 8, 128, 128256)}
HBM, BW, FLOPS = 80e9, 3.35e12, 989e12  # H100 SXM datasheet: 80 GB, 3.35 TB/s, 989 TFLOP/s dense bf16


def layer_and_head(name):
    n, d, ff, h, kv, hd, v = SHAPE[name]
    attn = d * h * hd * 2 + d * kv * hd * 2  # q, o and k, v projections
    return n * (attn + 3 * d * ff + 2 * d) + d, v * d  # layers with their norms and the final norm; output head


def step_share(depth):
    layers, head = layer_and_head("70b")
    return (layers * depth / 80 + head) / (layers + head)


def deepest(b):
    cdf, prev, total = Fraction(0), Fraction(0), Fraction(0)
    for layer, share in zip(EXITS, SHARES):
        cdf += share
        total += layer * (cdf ** b - prev ** b)
        prev = cdf
    return total


def test_params_match_published_counts():
    for name, count in (("70b", 70_553_706_496), ("8b", 8_030_261_248)):
        layers, head = layer_and_head(name)
        assert layers + 2 * head == count


def test_table():
    out = chapter_outputs.printed(NB, MARKER)
    small = sum(layer_and_head("8b")) / sum(layer_and_head("70b"))
    assert deepest(1) == 40
    for b in (1, 4, 32):
        depth = deepest(b)
        line = f"{b:>5} {float(depth):>10.1f} {step_share(float(depth)):>14.0%} {small:>8.0%}"
        assert line in out, line
        assert chapter_outputs.glued(NB, f"sd_eevs_depth_b{b}") == f"{float(depth):.1f}"
        assert chapter_outputs.glued(NB, f"sd_eevs_cost_b{b}") == f"{step_share(float(depth)):.0%}"
    assert chapter_outputs.glued(NB, "sd_eevs_small") == f"{small:.0%}" == "11%"
    assert chapter_outputs.glued(NB, "sd_eevs_depth_b4") == "61.6"
    assert chapter_outputs.glued(NB, "sd_eevs_cost_b1") == "51%"


def test_exit_check_cost():
    """Softmax checks at 20, 40 and 60 read the V x d head once more each time the step passes them."""
    out = chapter_outputs.printed(NB, MARKER)
    layers, head = layer_and_head("70b")
    share = head / (layers + head)
    assert f"one output-head read: {share:.2%} of the 70B's step" in out
    assert chapter_outputs.glued(NB, "sd_eevs_head") == f"{share:.1%}" == "1.5%"
    for b in (1, 32):
        cdf, extra = Fraction(0), Fraction(0)
        for s in SHARES[:-1]:
            cdf += s
            extra += 1 - cdf ** b
        cost = step_share(float(deepest(b))) + float(extra) * share
        assert f"batch {b:>2}: {float(extra):.2f} extra head reads, {cost:.1%} of the 70B's weights" in out
        assert chapter_outputs.glued(NB, f"sd_eevs_extra_b{b}") == f"{float(extra):.2f}"
        assert chapter_outputs.glued(NB, f"sd_eevs_check_b{b}") == f"{cost:.1%}"
    assert chapter_outputs.glued(NB, "sd_eevs_extra_b1") == "1.00"
    assert chapter_outputs.glued(NB, "sd_eevs_check_b32") == "103.6%"  # slower than the plain 70B


def test_memory_and_ridge():
    out = chapter_outputs.printed(NB, MARKER)
    for name, gpus in (("70b", 2), ("8b", 1)):
        n, _, _, _, kv, hd, _ = SHAPE[name]
        layers, head = layer_and_head(name)
        weights = 2 * (layers + 2 * head)
        per_token = 2 * n * kv * hd * 2
        left = gpus * HBM - weights
        assert f"weights {weights / 1e9:.1f} GB, cache {per_token // 1024} KiB a token, " \
               f"{left / per_token / 1e3:,.0f}K tokens" in out
        assert chapter_outputs.glued(NB, f"sd_eevs_w_{n}") == f"{weights / 1e9:.1f}"
        assert chapter_outputs.glued(NB, f"sd_eevs_kvtok_{n}") == f"{left / per_token / 1e3:,.0f}K"
    n, _, _, _, kv, hd, _ = SHAPE["70b"]
    layers, head = layer_and_head("70b")
    left = 0.9 * 2 * HBM - 2 * (layers + 2 * head)  # vLLM's default gpu_memory_utilization, two H100s
    assert chapter_outputs.glued(NB, "sd_eevs_left_util") == f"{left / 1e9:.1f}" == "2.9"
    assert chapter_outputs.glued(NB, "sd_eevs_kvtok_util") == f"{left / (2 * n * kv * hd * 2) / 1e3:,.0f}K"
    assert chapter_outputs.glued(NB, "sd_eevs_ridge") == f"{FLOPS / BW:.0f}" == "295"
    assert 32 < FLOPS / BW  # batch 32 decodes stay memory-bound


def test_links_citations_box_and_drill():
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-lookahead")
    chapter_outputs.assert_cited(text, ["schuster2022calm", "baldock2021difficulty", "mofakhami2024pcee",
                                        "delcorro2023skipdecode", "ong2024routellm", "chen2023frugalgpt",
                                        "elhoushi2024layerskip", "schuster2022calmblog", "hf_pr34240",
                                        "vllm_pr18994"])
    assert "ong2024routellm{§3}" not in text and "chen2023frugalgpt{§3}" not in text  # locators not read
    for phrase in ("hypothetical exit-trained", "Prefill runs at full depth", "compute-bound batch",
                   "frees only step time", "in cost and in latency", "fixed by position"):
        assert phrase in text, phrase
    labels = chapter_outputs.book_labels()
    for ref in ("speculative_decoding-early-exit", "multi_tenant_serving-routing",
                "speculative_decoding-self-speculative"):
        assert f"{{ref}}`{ref}`" in text and ref in labels
    assert "```{admonition} In the interview" in text
    assert ":::{admonition} [E] Drill:" in text and ":class: dropdown" in text
