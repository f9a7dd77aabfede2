"""mha_kit.chunk_positions against SGLang's DualChunkRotaryEmbedding rule, Qwen's LogN and GLM's Fig. 2."""
import math

import numpy as np
import pytest

import mha_kit as mk


def _dca_reference(i, j, chunk_size, local_size):
    # SGLang rope_variant.py DualChunkRotaryEmbedding: chunk_len = chunk_size - local_size;
    # keys at j % chunk_len; queries at i % chunk_len (intra), min(i % chunk_len + chunk_len, chunk_size)
    # (successive), and qc_cache[chunk_len - 1] = min(2 chunk_len - 1, chunk_size) (inter).
    s = chunk_size - local_size
    if i // s == j // s:
        q = i % s
    elif i // s == j // s + 1:
        q = min(i % s + s, chunk_size)
    else:
        q = min(2 * s - 1, chunk_size)
    return q - j % s


def test_dca_matches_reference_and_never_exceeds_chunk_size():
    n, big, local = 40, 10, 3
    d = mk.dca_distances(n, big, local)
    for i in range(n):
        for j in range(n):
            assert d[i, j] == (_dca_reference(i, j, big, local) if j <= i else -1)
    assert d.max() <= big
    s = big - local
    # inside a chunk and for the first `local` tokens across a boundary, the true distance survives
    assert all(d[i, j] == i - j for i in range(n) for j in range(n) if j <= i and i // s == j // s)
    assert d[s + 1, s - 1] == 2  # successive chunk, close pair: exact


def test_logn_scale():
    assert mk.logn_scale(1000, 2048) == 1.0
    assert mk.logn_scale(8192, 2048) == pytest.approx(math.log(8192) / math.log(2048))  # 13 / 11


def test_glm_position_ids_figure():
    # Du et al. 2022 Fig. 2: x1..x6, spans [x3] and [x5, x6]; Part A = x1 x2 [M] x4 [M] (5 tokens);
    # Part B = [S] x5 x6 [S] x3 (spans shuffled); the figure's Position 1 is 1 2 3 4 5 5 5 5 3 3
    # and its Position 2 is 0 0 0 0 0 1 2 3 1 2
    p1, p2 = mk.glm_position_ids(5, [(4, 2), (2, 1)])
    assert (p1 + 1).tolist() == [1, 2, 3, 4, 5, 5, 5, 5, 3, 3]
    assert p2.tolist() == [0, 0, 0, 0, 0, 1, 2, 3, 1, 2]


@pytest.mark.parametrize("call, match", [
    (lambda: mk.dca_distances(8, 4, 4), "local_size must be smaller than chunk_size"),
    (lambda: mk.dca_distances(0, 4, 1), "n must be a positive integer"),
    (lambda: mk.logn_scale(10, 1), "train_len must be at least 2"),
    (lambda: mk.glm_position_ids(5, [(5, 1)]), r"spans\[0\] mask_index"),
    (lambda: mk.glm_position_ids(5, [(1, 0)]), "span_len must be a positive integer"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_dca_dtype():
    assert mk.dca_distances(3, 2, 1).dtype == np.int64
