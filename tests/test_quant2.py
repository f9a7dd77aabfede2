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
