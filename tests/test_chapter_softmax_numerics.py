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
