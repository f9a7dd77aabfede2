"""MLA's naive and absorbed forms: multiply-adds written out from DeepSeek-V3's shape.

d_c = 512, d_rope = 64, d_nope = 128, d_v = 128, h = 128 (arXiv:2412.19437 sec. 4.2). The two forms
compute the same layer (tests/test_latent.py checks that numerically); here only their costs.
"""
import pytest

import mha_kit as mk

V3 = mk.PRESETS["deepseek-v3"]


def test_decode_naive_up_projects_the_whole_cache():
    macs = mk.mla_attention_macs(V3, 1, 8192, form="naive")
    assert macs["expand"] == 8192 * 512 * 128 * (128 + 128)
    assert macs["attention"] == 128 * 8192 * (128 + 64 + 128)
    assert macs["total"] == macs["expand"] + macs["attention"]


def test_decode_absorbed_attends_over_the_latent():
    macs = mk.mla_attention_macs(V3, 1, 8192, form="absorbed")
    assert macs["expand"] == 1 * 128 * 512 * (128 + 128)
    assert macs["attention"] == 128 * 8192 * (2 * 512 + 64)


def test_prefill_causal_pairs_and_which_form_is_cheaper():
    n = 4096
    pairs = n * (n + 1) // 2
    naive = mk.mla_attention_macs(V3, n, n, form="naive", causal=True)
    absorbed = mk.mla_attention_macs(V3, n, n, form="absorbed", causal=True)
    assert naive["attention"] == 128 * pairs * 320 and absorbed["attention"] == 128 * pairs * 1088
    assert naive["expand"] == absorbed["expand"]  # n latents up-projected against n queries folded
    assert naive["total"] < absorbed["total"]  # prefill: the naive form
    decode_naive = mk.mla_attention_macs(V3, 1, n, form="naive")["total"]
    assert decode_naive > 50 * mk.mla_attention_macs(V3, 1, n, form="absorbed")["total"]  # decode: absorbed


def test_chunk_over_a_cache_counts_the_causal_pairs():
    # 2 new queries after 3 cached tokens: they see 4 and 5 keys
    assert mk.mla_attention_macs(V3, 2, 5, form="naive", causal=True)["attention"] == 128 * (4 + 5) * 320


def test_decode_intensity_by_hand():
    assert mk.mla_decode_intensity(V3) == pytest.approx(2 * 128 * 1088 / (576 * 2))
    assert mk.mla_decode_intensity(V3, heads_per_gpu=16) == pytest.approx(2 * 16 * 1088 / 1152)
    assert mk.FLASHMLA_FP8_BYTES_PER_TOKEN == 656
    assert mk.mla_decode_intensity(V3, latent_bytes_per_token=656) == pytest.approx(2 * 128 * 1088 / 656)


@pytest.mark.parametrize("heads, query_tokens", [(128, 1), (128, 2), (16, 2), (64, 3)])
def test_decode_intensity_is_flashmla_ratio(heads, query_tokens):
    """FlashMLA's deep-dive: FLOPs 2 h_q s_q s_k (d_k + d_v), bytes 2 s_k d_k, with d_k = 576 and d_v = 512."""
    d_k, d_v, s_k = 576, 512, 8192
    ratio = (2 * heads * query_tokens * s_k * (d_k + d_v)) / (2 * s_k * d_k)
    assert ratio == pytest.approx(heads * query_tokens * (d_k + d_v) / d_k)
    assert mk.mla_decode_intensity(V3, heads_per_gpu=heads, query_tokens=query_tokens) == pytest.approx(ratio)


def test_flashmla_h800_rates_and_threshold():
    """The deep-dive: 3.35 TB/s, 990 TFLOPS at peak, about 865 TFLOPS throttled; h_q s_q >= (1/2)(865/3.35)."""
    h800 = mk.FLASHMLA_H800
    assert dict(h800) == {"hbm_bandwidth": 3.35e12, "peak_flops": 990e12, "throttled_flops": 865e12}
    threshold = 0.5 * h800["throttled_flops"] / h800["hbm_bandwidth"]
    assert 129 < threshold < 129.2  # the deep-dive writes it as 128
    assert mk.mla_decode_intensity(V3) < 2 * threshold < mk.mla_decode_intensity(V3, query_tokens=2)
    with pytest.raises(TypeError):
        h800["throttled_flops"] = 990e12  # read-only


def test_bad_input():
    with pytest.raises(ValueError, match=r"^query_tokens must be a positive integer, got 0$"):
        mk.mla_decode_intensity(V3, query_tokens=0)
    with pytest.raises(ValueError, match=r"expected a LatentAttentionConfig, got AttentionConfig"):
        mk.mla_attention_macs(mk.PRESETS["llama-3-8b"], 1, 10)
    with pytest.raises(ValueError, match=r"form must be 'absorbed' or 'naive', got 'fused'"):
        mk.mla_attention_macs(V3, 1, 10, form="fused")
    with pytest.raises(ValueError, match=r"num_queries \(11\) must not exceed context_len \(10\) when causal"):
        mk.mla_attention_macs(V3, 11, 10, causal=True)
