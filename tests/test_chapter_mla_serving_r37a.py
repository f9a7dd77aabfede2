"""Section mla_serving-absorb-at-runtime of "MLA as it is served".

DeepSeek-V3's reference code (inference/model.py, attn_impl "absorb") keeps W_UK and W_UV as slices of wkv_b and
folds them into the activations at run time; this recomputes the weights of the factors against the merged
matrices FlashInfer's PR 551 materialises (W_UQ_UK, W_UV_O), and the bf16 bytes a decode step reads for them,
from inference/configs/config_671B.json (dim 7168, n_heads 128, q_lora_rank 1536, kv_lora_rank 512,
qk_nope_head_dim 128, v_head_dim 128, n_layers 61) and the V3 report's 37B active parameters (sec. 4.2); written
out here, not through mha_kit.
"""
import chapter_outputs

NB = chapter_outputs.notebook("mla_serving")
D, H, R_Q, D_C, D_NOPE, D_V, LAYERS = 7168, 128, 1536, 512, 128, 128, 61
ACTIVE = 37_000_000_000
BF16 = 2

Q_FACTORS = R_Q * H * D_NOPE + D_C * H * D_NOPE  # W_UQ's position-free columns and W_UK
Q_MERGED = R_Q * H * D_C  # W_UQ_UK, [1536, 65536]
O_FACTORS = D_C * H * D_V + H * D_V * D  # W_UV and W_O
O_MERGED = H * D_C * D  # W_UV_O, [65536, 7168]
FACTORS, MERGED = Q_FACTORS + O_FACTORS, Q_MERGED + O_MERGED
CELL = 'ds = mk.MODEL_FACTS["deepseek-v3"]'


def worth_merging(m, k, n):
    """An (m, k) @ (k, n) pair merged into (m, n) is no bigger than the factors."""
    return m * n <= k * (m + n)


def test_exact_weights():
    assert (Q_FACTORS, Q_MERGED) == (33_554_432, 100_663_296)
    assert (O_FACTORS, O_MERGED) == (125_829_120, 469_762_048)
    assert Q_MERGED == 3 * Q_FACTORS  # exactly three times
    assert (FACTORS, MERGED) == (159_383_552, 570_425_344)


def test_the_rule_per_head():
    """The chapter's glued per-head ratios are the rule's merged / factors sizes recomputed here, and each is above 1
    exactly when the rule says the pair is not worth merging."""
    g = lambda key: chapter_outputs.glued(NB, key)  # noqa: E731
    for key, (m, k, n) in (("mla_abs_q_ratio", (R_Q, D_NOPE, D_C)),  # query: 1536 x 512 against 128 x 2048
                           ("mla_abs_o_ratio", (D_C, D_V, D))):  # output: 512 x 7168 against 128 x 7680
        ratio = m * n / (k * (m + n))
        assert g(key) == f"{ratio:.1f}"
        assert (float(g(key)) > 1) == (not worth_merging(m, k, n)) == (ratio > 1)
    assert worth_merging(512, 512, 512)  # the rule itself: a wide middle makes merging shrink the pair
    assert R_Q * D_C / (D_NOPE * (R_Q + D_C)) == Q_MERGED / Q_FACTORS


def test_glued():
    g = lambda key: chapter_outputs.glued(NB, key)  # noqa: E731
    assert g("mla_abs_q_ratio") == f"{Q_MERGED / Q_FACTORS:.1f}" == "3.0"
    assert g("mla_abs_o_ratio") == f"{O_MERGED / O_FACTORS:.1f}" == "3.7"
    assert g("mla_abs_ratio") == f"{MERGED / FACTORS:.1f}" == "3.6"
    assert g("mla_abs_factors_gb") == f"{FACTORS * BF16 * LAYERS / 1e9:.1f}" == "19.4"
    assert g("mla_abs_merged_gb") == f"{MERGED * BF16 * LAYERS / 1e9:.1f}" == "69.6"
    extra = (MERGED - FACTORS) * BF16 * LAYERS
    assert g("mla_abs_extra_gb") == f"{extra / 1e9:.1f}" == "50.1"
    assert g("mla_abs_active_gb") == f"{ACTIVE * BF16 / 1e9:.0f}" == "74"
    assert g("mla_abs_extra_share") == f"{extra / (ACTIVE * BF16):.1%}" == "67.8%"
    wkv_b = H * (D_NOPE + D_V) * D_C  # (h * 256, 512)
    assert g("mla_abs_fold_m") == f"{H * D_C * (D_NOPE + D_V) / 1e6:.1f}" == "16.8"
    dequant = wkv_b * 1 + 2 * wkv_b * BF16  # read FP8, write bf16, read bf16
    assert g("mla_abs_dequant_gb") == f"{dequant * LAYERS / 1e9:.1f}" == "5.1"


def test_printed_table():
    lines = chapter_outputs.printed(NB, CELL).splitlines()
    assert lines[1].split()[-5:] == [f"{Q_FACTORS / 1e6:.1f}", "M", f"{Q_MERGED / 1e6:.1f}", "M", "3.00"]
    assert lines[2].split()[-5:] == [f"{O_FACTORS / 1e6:.1f}", "M", f"{O_MERGED / 1e6:.1f}", "M",
                                     f"{O_MERGED / O_FACTORS:.2f}"]
    assert lines[3].split()[-5:] == [f"{FACTORS / 1e6:.1f}", "M", f"{MERGED / 1e6:.1f}", "M", f"{MERGED / FACTORS:.2f}"]
    assert f"{FACTORS * BF16 / 1e6:,.1f} MB a layer" in lines[5]
    assert f"{FACTORS * BF16 * LAYERS / 1e9:.1f} GB for {LAYERS} layers" in lines[5]
    assert f"{MERGED * BF16 / 1e6:,.1f} MB a layer" in lines[6]
    assert f"{MERGED * BF16 / 1e6:,.1f} MB" == "1,140.9 MB"
    wkv_b = H * (D_NOPE + D_V) * D_C
    dequant = wkv_b * 1 + 2 * wkv_b * BF16  # read FP8, write bf16, read bf16
    assert f"{wkv_b / 1e6:.1f} M multiply-adds" in lines[8]
    assert f"{dequant / 1e6:.1f} MB a layer, {dequant * LAYERS / 1e9:.1f} GB a step" in lines[8]


def test_prose_names_the_code_and_the_sources():
    text = chapter_outputs.section(NB, "mla_serving-absorb-at-runtime", end="mla_serving-intensity")
    for fact in ('attn_impl: Literal["naive", "absorb"] = "absorb"', "`kv_cache`", "`pe_cache`",
                 'einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :128])', "wkv_b[:, -128:]", "q_norm",
                 "$[1536, 65536]$", "mn \\le k(m + n)", "only suitable for decode", "gemm_impl",
                 "minor regression in short context", "no more bytes"):
        assert fact in text, fact
    for key in ("deepseekv3mlaabsorb", "deepseekv3issue848", "flashinfermla551", "vllmmla14770", "sglangmla4615"):
        assert key in text, key
    assert "In the interview" in text and ":class: dropdown followup" in text
