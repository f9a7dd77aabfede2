"""Section speculative_decoding-long-output-evaluation: the end-to-end speed-up on long contexts.

Recomputes, without mha_kit, the roofline of Llama 3 8B (target) and Llama 3.2 1B (draft, tied embeddings) in
bf16 on an H100 SXM from the models' config.json numbers and the datasheet's 3.35 TB/s and 989 TFLOPS: the
target's decode step at batch 1 and 64 for 4K, 32K and 128K contexts, the cache's share of it, the verification
ratio v for k = 4, the draft cost c of (a) the 1B draft with its own full cache and (b) the target over a
4,096-token cache, and the speed-ups E[tokens] / (k c + v) with alpha = 0.8 (E summed term by term); then the
prefill and memory ratios, the printed table, the glued values, and the section's citations and boxes.
"""

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("speculative_decoding")
LABEL = "speculative_decoding-long-output-evaluation"
BW, PEAK = 3.35e12, 989e12  # H100 SXM: HBM3 bytes/s, bf16 dense FLOP/s
ALPHA, K, BUDGET = 0.8, 4, 4096


def llama(vocab, d, layers, heads, kv_heads, head_dim, d_ff, tied):
    # parameters (embedding, per layer q/k/v/o + SwiGLU + 2 norms, final norm, output head unless tied),
    # KV bytes per token in bf16, attention FLOPs per query per cached token (QK^T and PV, 2 FLOPs a MAC)
    per_layer = d * heads * head_dim * 2 + d * kv_heads * head_dim * 2 + 3 * d * d_ff + 2 * d
    params = vocab * d + layers * per_layer + d + (0 if tied else vocab * d)
    kv = 2 * layers * kv_heads * head_dim * 2
    attn = 2 * 2 * heads * head_dim * layers
    return params, kv, attn


T_PARAMS, T_KV, T_ATTN = llama(128256, 4096, 32, 32, 8, 128, 14336, tied=False)  # Meta-Llama-3-8B config.json
D_PARAMS, D_KV, D_ATTN = llama(128256, 2048, 16, 32, 8, 64, 8192, tied=True)  # Llama-3.2-1B config.json
T_WEIGHTS, T_FLOPS = 2 * T_PARAMS, 2 * (T_PARAMS - 128256 * 4096)  # the input table is looked up, not multiplied
D_WEIGHTS, D_FLOPS = 2 * D_PARAMS, 2 * D_PARAMS  # the tied table is the output head


def seconds(weights, kv, flops_tok, attn, batch, queries, context):
    nbytes = weights + kv * batch * (context + queries)
    return max(nbytes / BW, batch * queries * (flops_tok + attn * context) / PEAK)


def target(batch, queries, context):
    return seconds(T_WEIGHTS, T_KV, T_FLOPS, T_ATTN, batch, queries, context)


def tokens(alpha, k):
    return sum(alpha ** i for i in range(k + 1))


def speedup(c, v):
    return tokens(ALPHA, K) / (K * c + v)


def row(batch, context):
    t1 = target(batch, 1, context)
    kv = T_KV * batch * (context + 1) / BW / t1
    v = target(batch, K + 1, context) / t1
    c_a = seconds(D_WEIGHTS, D_KV, D_FLOPS, D_ATTN, batch, 1, context) / t1
    c_b = target(batch, 1, min(BUDGET, context)) / t1
    return t1, kv, v, c_a, c_b


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_model_constants():
    assert T_PARAMS == 8_030_261_248 and T_WEIGHTS == 16_060_522_496 and T_KV == 131_072
    assert D_PARAMS == 1_235_814_400 and D_KV == 32_768
    out = chapter_outputs.printed(NB, "LO_ALPHA, LO_K, LO_BUDGET")
    assert (f"draft: {D_PARAMS:,} parameters, {D_KV:,} cache bytes a token against the target's {T_KV:,}; "
            f"alpha = 0.8, k = 4: {tokens(ALPHA, K):.2f} tokens a step") in out
    assert glued("sdlo_tokens") == "3.36"


@pytest.mark.parametrize("batch", (1, 64))
@pytest.mark.parametrize("context", (4096, 32768, 131072))
def test_table_row(batch, context):
    t1, kv, v, c_a, c_b = row(batch, context)
    gib = T_KV * batch * context / 2**30
    line = (f"{batch:>3}{context:>9,}{1e3 * t1:>8.2f}ms{kv:>10.0%}{v:>6.2f}{c_a:>8.3f}{speedup(c_a, v):>6.2f}x"
            f"{c_b:>8.3f}{speedup(c_b, v):>6.2f}x{gib:>10,.1f} GiB")
    assert line in chapter_outputs.printed(NB, "LO_ALPHA, LO_K, LO_BUDGET"), line
    tag = f"b{batch}_{context // 1024}k"
    assert glued(f"sdlo_ms_{tag}") == f"{1e3 * t1:.2f}" and glued(f"sdlo_kv_{tag}") == f"{kv:.0%}"
    assert glued(f"sdlo_up_small_{tag}") == f"{speedup(c_a, v):.2f}"
    assert glued(f"sdlo_up_self_{tag}") == f"{speedup(c_b, v):.2f}"
    assert glued(f"sdlo_c_self_{tag}") == f"{c_b:.3f}" and glued(f"sdlo_c_small_{tag}") == f"{c_a:.3f}"


def test_the_story_the_prose_tells():
    # at batch 64 the self-draft's speed-up appears and grows with the context; the full-cache draft's slides
    self64 = [speedup(row(64, s)[4], row(64, s)[2]) for s in (4096, 32768, 131072)]
    small64 = [speedup(row(64, s)[3], row(64, s)[2]) for s in (4096, 32768, 131072)]
    assert self64[0] < 1 < self64[1] < self64[2] and small64 == sorted(small64, reverse=True)
    assert all(abs(row(64, s)[2] - 1) < 0.005 for s in (4096, 32768, 131072))  # v = 1.00 throughout
    assert speedup(row(1, 32768)[4], 1) < 1 < speedup(row(1, 131072)[4], 1)  # break-even past 32K at batch 1
    assert abs(row(64, 131072)[3] - D_KV / T_KV) < 0.01  # c (a) near the cache ratio
    assert T_KV * 64 * 32768 > 80e9  # the batch-64 caches do not fit one H100


def test_prefill_and_memory():
    def prefill(flops_tok, attn, s):
        return flops_tok * s + attn * s * (s - 1) // 2
    pre = {s: prefill(D_FLOPS, D_ATTN, s) / prefill(T_FLOPS, T_ATTN, s) for s in (4096, 131072)}
    assert glued("sdlo_pre_4k") == f"{pre[4096]:.0%}" == "17%" and glued("sdlo_pre_128k") == f"{pre[131072]:.0%}"
    assert glued("sdlo_mem") == "25%" and glued("sdlo_fit") == "80%" and glued("sdlo_budget_128k") == "3.1%"



def test_section_citations_links_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-intensity", kinds=("markdown",))
    chapter_outputs.assert_cited(text, ("sadhukhan2024magicdec", "magicdeccode", "sun2024triforce", "triforcecode", "yang2025longspec",
                  "li2024snapkv"))
    flat = " ".join(text.split())
    for phrase in ("2.51 times", "32 to 256", "2.31 times", "4,096-token", "257 tokens", "p50 and p99", "TPOT",
                   "greedy equality", "output position", "logit gap", "is a bug", "PG-19", "2.25 times",
                   "median hides", "provided the contexts are long", "$\\gamma = 6$"):
        assert phrase in flat, phrase
    for label in ("speculative_decoding-scheduler", "speculative_decoding-vllm-metrics",
                  "speculative_decoding-output-drift", "speculative_decoding-walltime"):
        assert "{ref}`" + label + "`" in text, label
    assert "In the interview" in text and text.count(":class: dropdown") == 3 and "Drill:" in text
    assert text.count("**Strong answer.**") == 3 and text.count("**Trap.**") == 3
    # the box no longer attributes the roofline's numbers to the papers, and it is tagged H like its question
    box = flat[flat.index("In the interview"):flat.index("p99 end-to-end latency got worse")]
    assert "(MagicDec, TriForce)" not in box and "this chapter's roofline" in box and '[H] "How do you' in box
    assert "numerics, not from the algorithm" not in flat
    # MagicDec README's self-speculation example: --prefix_len 16032 --max_len 16128
    assert glued("sdlo_magicdec_gen") == f"{16128 - 16032:,}" == "96"
    # from 32K on a large batch helps the self-draft more than batch 1: compare the recomputed speed-ups
    ups = {b: [speedup(row(b, s)[4], row(b, s)[2]) for s in (4096, 32768, 131072)] for b in (1, 64)}
    assert all(big > small for big, small in zip(ups[64][1:], ups[1][1:]))
    assert glued("sdlo_up_self_b64_32k") == f"{ups[64][1]:.2f}" and glued("sdlo_up_self_b1_32k") == f"{ups[1][1]:.2f}"
    # the drill's arithmetic: 15.05 / 333.01 ms, k = 4
    assert abs(tokens(ALPHA, K) / (4 * 15.05 / 333.01 + 1) - float(glued("sdlo_up_self_b64_128k"))) < 0.01
