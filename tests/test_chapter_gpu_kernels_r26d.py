"""Section gpu_kernels-gemm-recursion: the triple loop's count, the recursive quadrant GEMM and Strassen.

The counts are recomputed here from the recurrences (CLRS 3rd ed., sec. 4.2: eight or seven half-size
products; Strassen 1969: 18 block additions a level) by integer recursion, without numpy or the chapter's
code, and compared exactly with the chapter's printed table and glued values. The products themselves are
checked with a plain-Python Strassen on small integer matrices.
"""
import math

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("gpu_kernels")
CUTOFF = 64


def counts(n, products, block_adds, cutoff=1):
    """(multiplications, additions) of the recursion T(n) = products T(n/2) + block_adds (n/2)^2."""
    if n <= cutoff:
        return n**3, n * n * (n - 1)
    m, s = counts(n // 2, products, block_adds, cutoff)
    return products * m, products * s + block_adds * (n // 2) ** 2


def matmul(a, b):
    return [[sum(a[i][p] * b[p][j] for p in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def strassen(a, b):
    n = len(a)
    if n == 1:
        return [[a[0][0] * b[0][0]]]
    h = n // 2

    def q(x, r, c):
        return [row[c * h:(c + 1) * h] for row in x[r * h:(r + 1) * h]]

    def add(x, y, sign=1):
        return [[u + sign * v for u, v in zip(rx, ry)] for rx, ry in zip(x, y)]

    a11, a12, a21, a22 = q(a, 0, 0), q(a, 0, 1), q(a, 1, 0), q(a, 1, 1)
    b11, b12, b21, b22 = q(b, 0, 0), q(b, 0, 1), q(b, 1, 0), q(b, 1, 1)
    m1 = strassen(add(a11, a22), add(b11, b22))
    m2 = strassen(add(a21, a22), b11)
    m3 = strassen(a11, add(b12, b22, -1))
    m4 = strassen(a22, add(b21, b11, -1))
    m5 = strassen(add(a11, a12), b22)
    m6 = strassen(add(a21, a11, -1), add(b11, b12))
    m7 = strassen(add(a12, a22, -1), add(b21, b22))
    c11 = add(add(m1, m4), add(m7, m5, -1))
    c12, c21 = add(m3, m5), add(m2, m4)
    c22 = add(add(m1, m2, -1), add(m3, m6))
    return [r1 + r2 for r1, r2 in zip(c11, c12)] + [r1 + r2 for r1, r2 in zip(c21, c22)]


def test_strassen_formulas_give_the_product():
    a = [[(3 * i + 5 * j) % 7 - 3 for j in range(8)] for i in range(8)]
    b = [[(2 * i * j + 1) % 5 - 2 for j in range(8)] for i in range(8)]
    assert strassen(a, b) == matmul(a, b)


@pytest.mark.parametrize("k", [1, 2, 4, 6, 8, 9, 10, 12])
def test_counts_closed_forms(k):
    n = 2**k
    assert counts(n, 8, 4) == (n**3, n * n * (n - 1))
    assert counts(n, 7, 18) == (7**k, 6 * (7**k - 4**k))


def test_printed_table():
    lines = chapter_outputs.printed(NB, "gk26_m8_4096").splitlines()
    expected = []
    for k in (1, 2, 4, 6, 8, 9, 10, 12):
        n = 2**k
        m8, _ = counts(n, 8, 4)
        m7, s7 = counts(n, 7, 18)
        classic = 2 * n**3 - n * n
        cut, _ = counts(n, 7, 18, CUTOFF)
        expected.append(f"n = {n:5d}: quadrants {m8:>14,} mults, Strassen {m7:>14,} mults + {s7:>14,} adds "
                        f"= {m7 + s7:>14,} ops vs classic {classic:>14,}; Strassen to 64 then classic: {cut:>14,} mults")
    assert lines[:-2] == expected
    assert lines[-2].endswith("at n = 1024")
    cut, cut_adds = counts(4096, 7, 18, CUTOFF)
    classic = 2 * 4096**3 - 4096**2
    assert lines[-1] == (f"n = 4096, Strassen to 64 then classic: {cut:,} mults + {cut_adds:,} adds = "
                         f"{cut + cut_adds:,} ops, {(cut + cut_adds) / classic:.2f} x the triple loop's {classic:,}")


def test_glued_values_and_crossover():
    cross = next(2**k for k in range(1, 20) if sum(counts(2**k, 7, 18)) < 2 * 8**k - 4**k)
    assert cross == 1024
    assert chapter_outputs.glued(NB, "gk26_strassen_cross") == str(cross)
    assert chapter_outputs.glued(NB, "gk26_m8_4096") == f"{8**12:,}"
    assert chapter_outputs.glued(NB, "gk26_m7_4096") == f"{7**12:,}"
    assert chapter_outputs.glued(NB, "gk26_cut_4096") == f"{7**6 * 64**3:,}"
    # Strassen from 4096 down to 64, then the classic product: its additions are 64**2 * 63 per leaf block
    # plus 18 (n/2)^2 per Strassen node; 512 is the last power of two where Strassen to 1 x 1 still loses
    cut_adds = 7**6 * 64 * 64 * 63 + 18 * sum(7**j * (2048 >> j) ** 2 for j in range(6))
    assert cut_adds == counts(4096, 7, 18, CUTOFF)[1] == 33_149_767_680
    classic = 2 * 4096**3 - 4096**2
    assert chapter_outputs.glued(NB, "gk26_cut_adds_4096") == f"{cut_adds:,}"
    assert chapter_outputs.glued(NB, "gk26_cut_ops_4096") == f"{7**6 * 64**3 + cut_adds:,}"
    assert chapter_outputs.glued(NB, "gk26_classic_4096") == f"{classic:,}"
    assert chapter_outputs.glued(NB, "gk26_cut_ratio_4096") == f"{(7**6 * 64**3 + cut_adds) / classic:.2f}" == "0.47"
    assert sum(counts(512, 7, 18)) > 2 * 512**3 - 512**2


def test_64_by_64_counts_and_exponent():
    text = chapter_outputs.printed(NB, "def recursive_gemm")
    m8, s8 = counts(64, 8, 4)
    m7, s7 = counts(64, 7, 18)
    assert f"{m8:,} multiplications, {s8:,} additions" in text
    assert f"{m7:,} multiplications, {s7:,} additions" in text
    assert text.count("equals A @ B: True") == 2
    # the chapter recurses to 1 x 1 on a 16 x 16 corner only and prints 64 x 64 from the closed forms
    assert counts(16, 8, 4) == (8**4, 16 * 16 * 15) and counts(16, 7, 18) == (7**4, 6 * (7**4 - 4**4))
    assert text.count("16 x 16 to 1 x 1 counted = closed form: True") == 2
    assert f"log2 7 = {math.log2(7):.3f}" in text
