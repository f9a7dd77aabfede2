"""Section prefix_caching-looks-slower of "Prefix caching in depth": why a prefix-cached run can look slower.

The TTFT saved by a cache hit for Llama 3 8B (one H100) and 70B (TP8), recomputed from the models' shapes written
out (config.json) and the H100 datasheet rates, not through mk.prefill_flops or mk.decode_streamed_params: a pass
costs the larger of one bf16 weight read and its FLOPs at 50% of the bf16 peak. Then the ridge where a pass turns
compute-bound, the assumed hashing cost, and the section's claims and cross-references.
"""
import chapter_outputs

BW, PEAK, MFU = 3.35e12, 989e12, 0.5  # H100 SXM: HBM bytes/s, dense bf16 FLOP/s; assumed share of the peak
HASH_US, BLOCK, SUFFIX = 2.0, 16, 32
V = 128_256  # Llama 3 vocabulary
# name: (layers, d, query heads, KV heads, head dim, d_ff, tensor-parallel GPUs), from each model's config.json
MODELS = {"llama-3-8b": (32, 4096, 32, 8, 128, 14_336, 1), "llama-3-70b": (80, 8192, 64, 8, 128, 28_672, 8)}
NB = chapter_outputs.notebook("prefix_caching")
MARKER = "ridge = MFU * H100.bf16_flops"


def layer_weights(name):
    layers, d, h, kv, hd, ff, _ = MODELS[name]
    return layers * (2 * d * h * hd + 2 * d * kv * hd + 3 * d * ff)  # q, o; k, v; SwiGLU's three matrices


def pass_ms(name, new, cached):
    """One prefill pass over ``new`` tokens after ``cached`` ones, per GPU, in ms."""
    layers, d, h, kv, hd, ff, tp = MODELS[name]
    read = (layer_weights(name) + layers * 2 * d + d + V * d) * 2  # norms and the output head; not the input table
    attn = sum(4 * layers * h * hd * (cached + i) for i in range(1, new + 1))  # new token i sees cached + i keys
    flops = 2 * new * layer_weights(name) + 2 * V * d + attn
    return 1e3 * max(read / tp / BW, flops / tp / (MFU * PEAK))


def saved(name, prefix):
    return pass_ms(name, prefix + SUFFIX, 0) - pass_ms(name, SUFFIX, prefix)


def test_ridge_is_model_independent():
    ridge = MFU * PEAK / BW
    assert f"{ridge:.0f}" == "148" == chapter_outputs.glued(NB, "pc_slow_ridge")
    assert "below about 148 tokens" in chapter_outputs.printed(NB, MARKER)


def test_saving_by_prefix_length():
    assert saved("llama-3-8b", 64) == 0.0  # both passes are bound by the same weight read
    assert saved("llama-3-70b", 64) == 0.0
    assert f"{saved('llama-3-8b', 64):.2f}" == chapter_outputs.glued(NB, "pc_slow_8b_64") == "0.00"
    assert f"{saved('llama-3-8b', 256):.1f}" == chapter_outputs.glued(NB, "pc_slow_8b_256") == "3.7"
    assert f"{saved('llama-3-8b', 4096):.0f}" == chapter_outputs.glued(NB, "pc_slow_8b_4096") == "121"
    assert f"{saved('llama-3-70b', 8192):.0f}" == chapter_outputs.glued(NB, "pc_slow_70b_8192") == "302"
    text = chapter_outputs.printed(NB, MARKER)
    for name, tp in (("llama-3-8b", 1), ("llama-3-70b", 8)):
        for prefix in (64, 256, 1024, 4096, 8192):
            row = f"{name:<12} TP{tp} prefix {prefix:>5}: TTFT cold {pass_ms(name, prefix + SUFFIX, 0):6.1f} ms"
            assert row in text
            assert f"saved {saved(name, prefix):6.2f} ms" in text.split(row)[1].splitlines()[0]


def test_hashing_assumption():
    hashed = (8192 + SUFFIX) // BLOCK * HASH_US / 1e3  # 514 full blocks at 2 us
    assert f"{hashed:.2f}" == chapter_outputs.glued(NB, "pc_slow_hash_8192") == "1.03"
    assert hashed < saved("llama-3-8b", 8192) / 100  # well under 1% of the saving at a long prefix


def test_section_says_what_it_cites():
    text = chapter_outputs.section(NB, "prefix_caching-looks-slower", end="prefix_caching-declared-vs-automatic")
    for key in ("vllm3154", "vllm5177", "vllm2494", "vllmv1", "vllmprefixprefill", "vllm5339", "vllm11428"):
        assert f"`{key}" in text, key
    for phrase in ("enable_prefix_caching=True", "context_attention_fwd", "0% hit rate", "time to first token",
                   "{ref}`prefix_caching-what-breaks`", "{ref}`prefix_caching-rag-path`", r"3.35 \approx 148$"):
        assert phrase in text, phrase
    assert ":class: dropdown" in text and "{admonition} In the interview" in text


def test_example_on_opt_125m_saves_microseconds():
    """The example's four prompts (~100 shared + ~10 own tokens each) in one pass on opt-125m, fp16 weights."""
    params, tokens, own = 125e6, 4 * 110, 4 * 10
    read_us = 1e6 * params * 2 / BW
    cold = max(read_us, 1e6 * 2 * params * tokens / (MFU * PEAK))
    warm = max(read_us, 1e6 * 2 * params * own / (MFU * PEAK))
    assert tokens > MFU * PEAK / BW  # the batched pass is past the ridge: compute-bound, not read-bound
    assert warm == read_us  # the 40 uncached tokens are read-bound
    assert chapter_outputs.glued(NB, "pc_slow_opt_tokens") == "440"
    assert f"{cold:.0f}" == chapter_outputs.glued(NB, "pc_slow_opt_cold_us") == "222"
    assert f"{cold - warm:.0f}" == chapter_outputs.glued(NB, "pc_slow_opt_saved_us") == "148"
    assert cold - warm < 1000  # under a millisecond: nothing to save against engine overhead and decode


def test_v0_hit_path_is_backend_specific_and_first_use():
    text = chapter_outputs.section(NB, "prefix_caching-looks-slower", end="prefix_caching-declared-vs-automatic")
    for phrase in ("XFormers", "`vllmv0fahit", "varlen kernel", "later hits fast", "not a\n   steady-state slowdown",
                   "*hits* the cache", "earlier `prefix_pos` interface", "In this roofline model",
                   "microseconds", "closed PR"):
        assert phrase in text, phrase
    assert "weight-read-bound prefill" not in text  # the batched ~440-token pass is not read-bound
    assert "It can be slower than the plain path" not in text
