"""Section kv_cache_basics-parallel-samples-llamacpp of "The KV cache": several completions of one prompt.

The roofline decode step of Llama 3 8B in bf16 on one H100 SXM at batch 1, 4 and 8, recomputed from
the model's shape (config.json) and the datasheet rates, not through mk.roofline_step; the cache the
batched example reserves, n_kv_req = prompt + n x generated tokens, and its 256-cell padding; the
cache of n = 4 on a server with four streams (four prompt copies) against the unified buffer (one);
and the section's links.
"""
import chapter_outputs

# Llama 3 8B (config.json): 32 layers, d 4096, 32 query heads and 8 KV heads of 128, FFN 14336, vocabulary 128256
L, D, H, KV, HD, FFN, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PARAMS = 2 * V * D + L * (D * HD * (H + 2 * KV) + H * HD * D + 3 * D * FFN + 2 * D) + D  # untied head, norms
BW, PEAK = 3.35e12, 989e12  # H100 SXM datasheet: HBM3 bytes/s, dense bf16 FLOP/s
KV_TOKEN = 2 * L * KV * HD * 2  # keys and values, all layers, bf16
PROMPT, GEN = 1000, 256


def step(n_seq, cached):
    new = n_seq
    nbytes = 2 * PARAMS + KV_TOKEN * (cached + new)
    flops = 2 * (PARAMS - V * D) * new + 2 * (2 * H * HD) * L * cached
    return max(nbytes / BW, flops / PEAK)


def nb():
    return chapter_outputs.notebook("kv_cache_basics")


def glued(key):
    return chapter_outputs.glued(nb(), key)


def test_model_constants():
    assert PARAMS == 8_030_261_248
    assert KV_TOKEN == 131_072


def test_step_times():
    shared = {n: step(n, PROMPT + n * GEN) for n in (1, 4, 8)}
    own = {n: step(n, n * (PROMPT + GEN)) for n in (1, 4, 8)}
    assert f"{1e3 * 2 * PARAMS / BW:.2f}" == glued("kb_ll_weights_ms") == "4.79"
    assert f"{1e3 * shared[1]:.2f}" == glued("kb_ll_1")
    assert f"{1e3 * shared[8]:.2f}" == glued("kb_ll_8_shared")
    assert f"{1e3 * own[8]:.2f}" == glued("kb_ll_8_own")
    gain = (8 / shared[8]) / (1 / shared[1])
    assert f"{gain:.2f}" == glued("kb_ll_8_gain")
    assert 7.5 < gain < 8  # nearly free: eight sequences, not quite eight times the tokens
    assert 2 * PARAMS / BW > 10 * 2 * (PARAMS - V * D) * 8 / PEAK  # weights' read time dwarfs batch 8's FLOPs


def test_printed_table():
    out = chapter_outputs.printed(nb(), "own copies ms")
    for n in (1, 4, 8):
        shared, own = step(n, PROMPT + n * GEN), step(n, n * (PROMPT + GEN))
        cache_mib = (PROMPT + n * GEN) * KV_TOKEN / 2**20
        row = f"{n:>2}{1e3 * own:>15.2f}{1e3 * shared:>11.2f}{n / shared:>8.0f}"
        assert row in out, row
        assert f"{cache_mib:.0f} MiB" in out


def test_cache_per_extra_sequence():
    assert GEN * KV_TOKEN == 32 * 2**20 and glued("kb_ll_extra") == "32 MiB"
    assert PROMPT * KV_TOKEN / 2**20 == 125 and glued("kb_ll_prompt") == "125 MiB"


def test_split_against_unified_cache():
    # n = 4 on a server: -np 4 alone gives one stream per slot, so seq_cp copies the prompt into each
    split, unified = 4 * (PROMPT + GEN) * KV_TOKEN, (PROMPT + 4 * GEN) * KV_TOKEN
    assert glued("kb_ll_4_split") == f"{split / 2**20:.0f} MiB" == "628 MiB"
    assert glued("kb_ll_4_unified") == f"{unified / 2**20:.0f} MiB" == "253 MiB"
    assert split - unified == 3 * PROMPT * KV_TOKEN  # three extra prompt copies
    out = chapter_outputs.printed(nb(), "four streams")
    assert f"{split / 2**20:.0f} MiB in four streams, {unified / 2**20:.0f} MiB unified" in out


def test_batched_context_padding():
    n_kv_req = PROMPT + 8 * GEN
    n_ctx = (n_kv_req + 255) // 256 * 256
    assert glued("kb_ll_8_nkv") == f"{n_kv_req:,}" == "3,048"
    assert glued("kb_ll_8_nctx") == f"{n_ctx:,}" == "3,072"


def test_section_links():
    text = "".join(chapter_outputs.section(nb(), "kv_cache_basics-parallel-samples-llamacpp",
                                          end="kv_cache_basics-best-of-n", kinds=("markdown",)))
    for ref in ("kv_cache_basics-best-of-n", "kv_cache_basics-beam-search", "serving_reliability-cpu-edge"):
        assert f"{{ref}}`{ref}`" in text
    for key in ("llamacppbatched", "llamacppserver", "llamacppkvcache", "llamacpph", "vllmparallelsampling",
                "llamacppcontextcpp", "llamacppbatchcpp", "llamacppservermain", "vllmprefixcaching"):
        assert f"{key}{{" in text
