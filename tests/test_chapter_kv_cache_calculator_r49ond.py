"""Sections kv_cache_calculator-3b-on-device and kv_cache_calculator-wrong-rules of "KV-cache calculator".

The 3B on-device cache: Llama 3.2 3B's shape as Meta's llama-models sku_list gives it (dim 3072, 28 layers,
24 heads, 8 KV heads, so d_h = 128; d_ff 8,192 from ffn_dim_multiplier 1.0, V 128,256, tied head), the
model card's 3.21B parameters and measured RSS (OnePlus 12: 7,419 MB bf16, 3,726 MB SpinQuant), and
Apple's split (3/8 of the layers without K/V). The wrong rules: "8 x L x d" against 4Ld and GQA-8 on
Llama 3 70B (80 layers, d 8192, 64 heads, 8 KV heads of 128), and the TP degrees that divide 64 heads.
Written out here, not read through mha_kit, and compared with the stored outputs.
"""
import chapter_outputs

NB = chapter_outputs.notebook("kv_cache_calculator")
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40

L3, D3, H3, KV3, FF3, V3 = 28, 3072, 24, 8, 8192, 128_256
HD3 = D3 // H3
TOKEN3 = 2 * L3 * KV3 * HD3 * 2
CTX = 4096
CACHE3 = TOKEN3 * CTX
PARAMS3 = V3 * D3 + L3 * (2 * D3 * H3 * HD3 + 2 * D3 * KV3 * HD3 + 3 * D3 * FF3 + 2 * D3) + D3

L70, D70, H70, KV70, HD70 = 80, 8192, 64, 8, 128
TOKENS = 32 * 8192
RULE, MHA, GQA = 8 * L70 * D70, 4 * L70 * D70, 2 * L70 * KV70 * HD70 * 2


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_3b_cache_per_token_and_at_4k():
    assert HD3 == 128 and TOKEN3 == 114_688 == 112 * KIB
    assert CACHE3 == 448 * MIB and CACHE3 // 2 == 224 * MIB
    out = chapter_outputs.printed(NB, "l32 = mk.AttentionConfig")
    assert "per token: 2 x 28 x 8 x 128 x 2 bytes = 114,688 bytes = 112 KiB" in out
    assert f"4,096 tokens, bf16 cache: 448 MiB ({CACHE3 / 1e6:.0f} MB)" in out
    assert f"4,096 tokens, int8 cache: 224 MiB ({CACHE3 / 2e6:.0f} MB)" in out
    assert glued("calc_3b_token") == "112 KiB" and glued("calc_3b_token_int") == "114,688"
    assert glued("calc_3b_bf16") == "448 MiB" and glued("calc_3b_int8") == "224 MiB"
    assert glued("calc_3b_32k") == "3.5 GiB" and 8 * CACHE3 == 3.5 * GIB


def test_3b_weights_and_phone_memory():
    assert PARAMS3 == 3_212_749_824 and f"{PARAMS3 / 1e9:.2f}" == "3.21"  # the model card's 3.21B
    assert f"d_ff = {FF3:,}; parameters: {PARAMS3:,} (the card: 3.21B)" in chapter_outputs.printed(NB, "l32 = mk.AttentionConfig")
    w4 = PARAMS3 // 2
    assert glued("calc_3b_w4") == f"{w4 / 1e9:.2f} GB" == "1.61 GB"
    assert glued("calc_3b_w4_share") == f"{100 * CACHE3 / w4:.0f}" == "29"
    assert glued("calc_3b_rss_share") == f"{100 * CACHE3 / 3.726e9:.0f}" == "13"
    out = chapter_outputs.printed(NB, "l32 = mk.AttentionConfig")
    assert f"RSS of 7,419 MB: {100 * CACHE3 / 7.419e9:.1f}%" in out
    assert f"RSS of 3,726 MB: {100 * CACHE3 / 3.726e9:.1f}%" in out


def test_apple_split_on_the_3b_shape():
    assert CACHE3 * 5 // 8 == 280 * MIB and CACHE3 * 18 // 28 == 288 * MIB
    out = chapter_outputs.printed(NB, "apple_share = 3 / 8")
    assert "280 MiB in bf16 (-37.5%), 140 MiB in 8 bits" in out
    assert f"288 MiB in bf16 (-{100 * 10 / 28:.1f}%), 144 MiB in 8 bits" in out
    assert glued("calc_3b_apple") == "280 MiB" and glued("calc_3b_apple_int8") == "140 MiB"
    assert glued("calc_3b_18") == "288 MiB"
    assert glued("calc_3b_apple_pct") == f"{100 * 3 / 8:.1f}" == "37.5"
    text = chapter_outputs.section(NB, "kv_cache_calculator-3b-on-device", end="kv_cache_calculator-wrong-rules")
    assert "final* layer of Block 1" in text and "8 bits" in text and "8K context" in text
    chapter_outputs.assert_cited_in_list(text, ["applefm2025blog", "executorchllamaexport"])


def test_wrong_rules_70b():
    assert RULE * TOKENS == 1.25 * TIB and MHA * TOKENS == 640 * GIB and GQA * TOKENS == 80 * GIB
    assert RULE // GQA == 16 and RULE // MHA == 2
    out = chapter_outputs.printed(NB, "L70, d70, h70, hkv70, dh70")
    assert f"the rule's total in decimal units: {RULE * TOKENS / 1e12:.2f} TB" in out
    assert glued("calc_wr_rule") == "1.25 TiB" and glued("calc_wr_right") == "80 GiB"
    assert glued("calc_wr_factor") == "16" and glued("calc_wr_fp8") == "40 GiB"
    assert glued("calc_wr_rule_tb") == "1.37 TB"
    assert 2 * L70 * D70 * 4 == RULE and glued("calc_wr_fp32_mha") == "5 MiB"  # the rule is MHA in fp32
    parts = [L70 // 3] * 3
    for i in range(2, L70 % 3 + 2):  # vLLM get_pp_indices: leftovers to all but the last stage
        parts[-i] += 1
    assert parts == [27, 27, 26] and glued("calc_wr_pp_split") == "27/27/26"
    assert "pipeline stages over 3 GPUs: [27, 27, 26] layers (sum 80)" in out
    assert f"[{', '.join(str(t) for t in range(1, 9) if H70 % t == 0)}]; 3 divides them: False" in out


def test_sections_cite_and_link():
    text = chapter_outputs.section(NB, "kv_cache_calculator-3b-on-device", end="kv_cache_calculator-context")
    chapter_outputs.assert_cited_in_list(text, ["llama32sku", "llama32card", "applefm2025", "afm2025press",
                                                "vllmverifyparallel", "vllmppindices", "applefm2025blog",
                                                "executorchllamaexport"])
    labels = chapter_outputs.book_labels()
    for ref in ("beyond_kv_cache-cross-layer", "serving_reliability-on-device", "tensor_parallel-uneven-heads",
                "low_precision_kv-vllm", "kv_cache_calculator-formula", "beyond_kv_cache-local-global"):
        assert f"{{ref}}`{ref}`" in text or f"<{ref}>`" in text, ref
        assert ref in labels, ref
    assert "Tensor-parallel a 70B over 3 GPUs" in text and "Serve a 70B on 3 GPUs" not in text
    assert "(kv_cache_calculator-wrong-rules)=" in text and "In the interview" in text and ":class: dropdown" in text
