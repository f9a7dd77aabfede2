"""gpu_kernels-cpu-gemm: cache lines of the two loop orders, blocking, Strassen's seven products."""

import numpy as np


def test_cache_lines_per_inner_loop():
    n, line = 512, 64
    assert n * line // line == 512  # a column of fp64 B: one 64-byte line per element
    assert n * 8 // line == 64  # a row: eight fp64 values a line


def test_strassen_identity_and_counts():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    h = 4
    A = [[a[:h, :h], a[:h, h:]], [a[h:, :h], a[h:, h:]]]
    Bm = [[b[:h, :h], b[:h, h:]], [b[h:, :h], b[h:, h:]]]
    m1 = (A[0][0] + A[1][1]) @ (Bm[0][0] + Bm[1][1])
    m2 = (A[1][0] + A[1][1]) @ Bm[0][0]
    m3 = A[0][0] @ (Bm[0][1] - Bm[1][1])
    m4 = A[1][1] @ (Bm[1][0] - Bm[0][0])
    m5 = (A[0][0] + A[0][1]) @ Bm[1][1]
    m6 = (A[1][0] - A[0][0]) @ (Bm[0][0] + Bm[0][1])
    m7 = (A[0][1] - A[1][1]) @ (Bm[1][0] + Bm[1][1])
    c = np.block([[m1 + m4 - m5 + m7, m3 + m5], [m2 + m4, m1 - m2 + m3 + m6]])
    np.testing.assert_allclose(c, a @ b, atol=1e-12)
    additions = (2 + 1 + 1 + 1 + 1 + 2 + 2) + (3 + 1 + 1 + 3)  # forming the operands + combining
    assert additions == 18
    assert f"{np.log2(7):.3f}" == "2.807"
    assert f"{7**12 / 8**12:.2f}" == "0.20"
