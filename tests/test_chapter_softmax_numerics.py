"""Claims of the softmax-kernel section of chapter "Softmax numerics", recomputed independently."""
import numpy as np

import mha_kit as mk


def test_warp_kernel_and_sequential_loop_agree_within_rtol_but_not_bitwise():
    x = (np.random.default_rng(7).standard_normal((16, 1000)) * 4).astype(np.float32)
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x.astype(np.float64) - m).astype(np.float32)
    seq = np.zeros((16, 1), dtype=np.float32)
    for j in range(1000):  # one fp32 accumulator, left to right, written out
        seq = seq + e[:, j:j + 1]
    cpu = e / seq
    gpu = mk.warp_softmax(x)
    ref = np.exp(x.astype(np.float64) - m)
    ref /= ref.sum(axis=-1, keepdims=True)
    assert (gpu == cpu).mean() < 0.1  # only a few outputs bit-identical
    np.testing.assert_allclose(gpu, ref, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(cpu, ref, rtol=1e-5, atol=1e-12)
    assert np.abs(gpu / ref - 1).max() < np.abs(cpu / ref - 1).max()  # 32 short sums beat one long one


def test_norm_epsilon_is_lost_at_one_in_both_16_bit_formats_but_bf16_stores_it_normally():
    fp16, bf16 = mk.FLOAT_FORMATS["fp16"], mk.FLOAT_FORMATS["bf16"]
    assert fp16.epsilon == 2.0 ** -10 and bf16.epsilon == 2.0 ** -7  # step above 1.0: 10 and 7 stored bits
    for eps in (1e-5, 1e-6):
        assert eps < fp16.epsilon / 2 and eps < bf16.epsilon / 2  # round-to-nearest drops it at 1.0
        assert eps > bf16.smallest_normal  # bf16 has float32's exponent range: eps is a normal number
        assert eps < fp16.smallest_normal == 2.0 ** -14  # fp16 would hold it only as a subnormal
    assert np.float16(1.0) + np.float16(1e-5) == np.float16(1.0)
    assert f"{1 / np.sqrt(1e-5):,.0f}" == "316" and f"{1 / np.sqrt(1e-6):,.0f}" == "1,000"
