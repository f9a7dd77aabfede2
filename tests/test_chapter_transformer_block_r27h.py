"""Section transformer_block-three-families: Llama 3, Qwen3 and DeepSeek-V3 side by side, BF16 against FP8.

Recomputed here from the primary-source constants, not through mha_kit: the KV bytes per token from the layer
count and the cached widths (GQA: 2 x KV heads x 128; MLA: the 512-wide latent plus the 64-wide rotary key,
DeepSeek-V3 report sec. 4.2), Llama's parameter count from its tensor shapes (llama-models sku_list.py), the
published MoE counts (671B/37B, 30.5B/3.3B), and the formats' largest values from their bit layouts.
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("transformer_block")
LABEL = "transformer_block-three-families"
SEQ = 32 * 1024

# (layers, cached elements per token and layer)
KV = {
    "llama_3_70b": (80, 2 * 8 * 128),
    "llama_31_405b": (126, 2 * 8 * 128),
    "qwen3_30b_a3b": (48, 2 * 4 * 128),
    "deepseek_v3": (61, 512 + 64),
}


def llama_params(d, layers, heads, kv_heads, d_ff, vocab=128_256, d_h=128):
    attn = d * heads * d_h * 2 + d * kv_heads * d_h * 2  # W_q, W_o; W_k, W_v
    return 2 * vocab * d + layers * (attn + 3 * d * d_ff + 2 * d) + d  # untied head, final norm


ACTIVE = {
    "llama_3_70b": llama_params(8192, 80, 64, 8, 28_672),
    "llama_31_405b": llama_params(16_384, 126, 128, 8, 53_248),
    "qwen3_30b_a3b": 3_300_000_000,
    "deepseek_v3": 37_000_000_000,
}


def glued(key):
    return chapter_outputs.glued(NB, key)


def kv_token(name):
    layers, width = KV[name]
    return layers * width * 2  # bf16


def test_section_sits_after_the_modern_block_and_links_its_neighbours():
    labels = re.findall(r"^\(([\w-]+)\)=$", "\n".join("".join(c["source"]) for c in NB["cells"]), re.M)
    assert labels.index(LABEL) == labels.index("transformer_block-modern-block") + 1
    text = chapter_outputs.section(NB, LABEL)
    for ref in ("softmax_numerics-formats", "weight_quantization-fp4-fp8", "tradeoffs-mla",
                "moe_serving-expert-parallelism", "tensor_parallel-dp-attention", "transformer_block-qwen-generations"):
        assert f"{{ref}}`{ref}`" in text
    assert "deepseekv3{§3.3}" in text and "llama3{Table 4}" in text and "llama3{§6.2}" in text


def test_kv_bytes_per_token_and_per_32k_sequence():
    for name in KV:
        assert glued(f"tb_fam_{name}_kv") == f"{kv_token(name):,}"
        assert glued(f"tb_fam_{name}_kv32k") == f"{kv_token(name) * SEQ / 1e9:.2f} GB"
    assert kv_token("deepseek_v3") == 70_272 and kv_token("llama_3_70b") == 327_680
    assert glued("tb_fam_kv_ratio") == f"{327_680 / 70_272:.1f}"


def test_weight_bytes_per_decode_token():
    assert ACTIVE["llama_3_70b"] == 70_553_706_496
    for name, active in ACTIVE.items():
        assert glued(f"tb_fam_{name}_bf16") == f"{2 * active / 1e9:.1f} GB"
        assert glued(f"tb_fam_{name}_fp8") == f"{active / 1e9:.1f} GB"
    assert glued("tb_fam_active_ratio") == f"{37e9 / ACTIVE['llama_3_70b']:.2f}"
    assert glued("tb_fam_total_ratio") == f"{671e9 / ACTIVE['llama_3_70b']:.1f}"
    assert float(glued("tb_fam_active_ratio")) < 1 < float(glued("tb_fam_total_ratio"))


def test_printed_table_rows():
    out = chapter_outputs.printed(NB, "FAMILY = (")
    assert re.search(r"^DeepSeek-V3\s+MLA, latent 512\+64\s+61\s+70,272 .* 256\+1 shared, top-8 ", out, re.M)
    assert re.search(r"^Qwen3-30B-A3B\s+GQA 32/4\s+48\s+98,304 .* 128\+0 shared, top-8 ", out, re.M)
    assert re.search(r"^Llama 3 70B\s+GQA 64/8\s+80\s+327,680 .* dense ", out, re.M)


def test_format_ranges():
    # E4M3: bias 7, top exponent holds numbers, all-ones mantissa is NaN -> 1.75 * 2^8
    assert glued("tb_fam_e4m3_max") == f"{1.75 * 2 ** 8:,.0f}" == "448"
    # E5M2: IEEE-like, bias 15, largest exponent 15 -> 1.75 * 2^15
    assert glued("tb_fam_e5m2_max") == f"{1.75 * 2 ** 15:,.0f}" == "57,344"
    # BF16: FP32's exponent, 7 mantissa bits -> (2 - 2^-7) * 2^127
    assert glued("tb_fam_bf16_max") == f"{(2 - 2 ** -7) * 2.0 ** 127:.2e}"


def test_context_release_size_and_fp8_releases():
    # Qwen3-30B-A3B: 32,768 native, YaRN factor 4 (model card); DeepSeek-V3 HF release 671B + 14B MTP (repo README)
    assert glued("tb_fam_qwen_native_ctx") == f"{32_768:,}"
    assert glued("tb_fam_qwen_yarn_ctx") == f"{4 * 32_768:,}" == "131,072"
    assert (glued("tb_fam_ds_main_params"), glued("tb_fam_ds_mtp_params")) == ("671B", "14B")
    assert glued("tb_fam_ds_release_params") == f"{671 + 14}B"
    assert glued("tb_fam_llama_scale_cap") == "1,200"  # Llama 3 report sec. 6.2
    text = chapter_outputs.section(NB, LABEL)
    assert "metallama405bfp8card" in text and "BF16 from Meta" not in text
    assert "At batch 1 a decode step" in text and "E5M6" in text and "deepseekv3{§3.3.3}" in text
    assert "engines run attention\n  data-parallel instead" not in text
