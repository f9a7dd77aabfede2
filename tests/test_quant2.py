"""mha_kit.weight_quant additions (quant2): roofline crossovers, ggml K-quant block sizes, 2:4 sparse bytes,
vLLM's mixed-precision kernel list, each against its primary source or a hand-worked value."""
import pytest

import mha_kit as mk


def test_compute_bound_tokens_is_the_ridge_for_bf16_and_scales_with_bits():
    # bf16: 2 bytes per weight, 2 FLOPs per weight per token -> 1 FLOP/byte per token: ridge = F / B
    assert mk.compute_bound_tokens(16, 2.0e12, 400e12) == pytest.approx(200.0)
    # int4 with group-128 fp16 scale + zero (4.25 bits): 4.25 / 16 of that
    assert mk.compute_bound_tokens(4.25, 2.0e12, 400e12) == pytest.approx(200.0 * 4.25 / 16)
    with pytest.raises(ValueError, match="must be positive"):
        mk.compute_bound_tokens(0, 2.0e12, 400e12)


def test_quantized_loses_where_its_compute_time_meets_the_dense_step():
    bw, flops, eff, params = 2.0e12, 400e12, 0.8, 10**9
    n = mk.quantized_loses_tokens(bw, flops, eff)
    assert n == pytest.approx(160.0)  # 0.8 * ridge 200
    dense = mk.weight_step_seconds(params, int(n), 16, bw, flops)
    quant = mk.weight_step_seconds(params, int(n), 4.25, bw, eff * flops)
    assert quant == pytest.approx(dense)
    assert mk.weight_step_seconds(params, 200, 4.25, bw, eff * flops) > mk.weight_step_seconds(params, 200, 16, bw, flops)
    with pytest.raises(ValueError, match=r"efficiency must lie in \(0, 1\]"):
        mk.quantized_loses_tokens(bw, flops, 1.2)


@pytest.mark.parametrize("fmt, block_bytes, weights", [
    # sizes asserted in ggml/src/ggml-common.h (static_assert ... "wrong q4_K block size/padding")
    ("q4_0", 2 + 16, 32), ("q8_0", 2 + 32, 32),
    ("q2_K", 2 * 2 + 256 // 16 + 256 // 4, 256),        # 84
    ("q3_K", 2 + 256 // 4 + 256 // 8 + 12, 256),         # 110
    ("q4_K", 2 * 2 + 12 + 256 // 2, 256),                # 144
    ("q5_K", 2 * 2 + 12 + 256 // 2 + 256 // 8, 256),     # 176
    ("q6_K", 2 + 256 // 2 + 256 // 4 + 256 // 16, 256),  # 210
])
def test_ggml_block_sizes_match_the_static_asserts(fmt, block_bytes, weights):
    assert mk.ggml_bits_per_weight(fmt) == 8 * block_bytes / weights


def test_ggml_comments_effective_bits():
    # ggml-common.h comments: "Effectively 4.5 bits per weight", "5.5", "6.5625"
    assert [mk.ggml_bits_per_weight(f) for f in ("q4_K", "q5_K", "q6_K")] == [4.5, 5.5, 6.5625]
    with pytest.raises(ValueError, match="fmt must be one of"):
        mk.ggml_bits_per_weight("q4_K_M")


def test_sparse24_keeps_half_the_values_and_a_two_bit_index_each():
    assert mk.sparse24_bits_per_weight(16) == 9.0  # 2 x (16 + 2) bits per 4 weights
    assert mk.sparse24_bits_per_weight(8) == 5.0
    assert mk.sparse24_bits_per_weight(16, 0) == 8.0
    with pytest.raises(ValueError, match="index_bits must be an integer >= 0"):
        mk.sparse24_bits_per_weight(16, -1)
    with pytest.raises(ValueError, match="value_bits"):
        mk.sparse24_bits_per_weight(0)


def test_choose_mp_kernel_walks_vllms_priority_list():
    # kernels/linear/__init__.py _POSSIBLE_KERNELS order; Machete and CUTLASS W4A8 need exactly capability 90
    assert mk.choose_mp_kernel(90, 4) == "MacheteLinearKernel"
    assert mk.choose_mp_kernel(90, 4, act="fp8") == "CutlassW4A8LinearKernel"
    assert mk.choose_mp_kernel(90, 4, act="fp8", group_size=64) == "MarlinLinearKernel"
    assert mk.choose_mp_kernel(100, 4) == "MarlinLinearKernel"  # Blackwell falls through to Marlin
    assert mk.choose_mp_kernel(80, 4) == "MarlinLinearKernel"
    assert mk.choose_mp_kernel(80, 8, group_size=-1) == "AllSparkLinearKernel"  # Ampere W8A16, per channel
    with pytest.raises(ValueError, match="no kernel in the list"):
        mk.choose_mp_kernel(70, 4)


# --- the chapter's claims, recomputed with the products written out (not read from the notebook) ---
H100_BW, H100_BF16, H100_FP8 = 3.35e12, 989e12, 1979e12  # H100 SXM datasheet, dense peaks


def test_chapter_w4a8_knee_is_twice_w4a16s_and_wins_at_256():
    int4 = 4 + 16 / 128  # symmetric int4, one 16-bit scale per 128 weights
    w4a16_knee = int4 / 8 * H100_BF16 / (2 * H100_BW)
    w4a8_knee = int4 / 8 * H100_FP8 / (2 * H100_BW)
    assert round(w4a16_knee) == 76 and round(w4a8_knee) == 152
    params, n = 70 * 10**9, 256
    w4a8 = max(params * int4 / 8 / H100_BW, 2 * params * n / H100_FP8)
    w8a8 = max(params * 1 / H100_BW, 2 * params * n / H100_FP8)
    w4a16 = max(params * int4 / 8 / H100_BW, 2 * params * n / H100_BF16)
    assert w4a8 < w8a8 < w4a16  # W8A8 still memory-bound at 256 tokens, W4A16 compute-bound at bf16


def test_chapter_bf16_wins_from_eta_times_the_ridge():
    ridge = 2 * H100_BF16 / (2 * H100_BW)  # bf16: 2 bytes and 2 FLOPs per weight per token
    assert round(ridge) == 295 and round(0.8 * ridge) == 236
    params, n = 70 * 10**9, 512
    bf16 = max(params * 2 / H100_BW, 2 * params * n / H100_BF16)
    int4_eta08 = max(params * 4.125 / 8 / H100_BW, 2 * params * n / (0.8 * H100_BF16))
    assert bf16 / int4_eta08 == pytest.approx(0.8)


def test_chapter_sparse24_roofline_gains():
    params = 70 * 10**9
    decode = (params * 2 / H100_BW) / (params * 9 / 8 / H100_BW)
    prefill = (2 * params * 4096 / H100_BF16) / (2 * params * 4096 / (2 * H100_BF16))
    assert decode == pytest.approx(16 / 9) and prefill == 2.0
    assert 0.5 * (16 + 16) == 16  # unstructured 50% with a 16-bit index per kept bf16 value: no saving
