"""mha_kit.kernel_choices against its sources: CUTLASS's stage-count rule (sm90_gmma_builder.inl),
Milakov and Gimelshein's Algorithms 2 and 3 (arXiv:1805.02867), CSR as SciPy stores it, Bell and
Garland's CSR-scalar mapping, row-major strides as NumPy computes them, and hand-counted atomics."""
import numpy as np
import pytest

import mha_kit as mk

H100_SMEM = 232448  # CUTLASS detail::sm90_smem_capacity_bytes (227 KiB)


def test_stage_count_matches_cutlass_rule():
    # bf16 128x128x64: A and B tiles 16 KiB each, + 16 B of barriers = 32,784 B a stage
    assert mk.max_pipeline_stages(H100_SMEM, 128, 128, 64, 16, 16) == 232448 // 32784 == 7
    assert mk.max_pipeline_stages(H100_SMEM, 128, 128, 64, 16, 16, carveout_bytes=32768) == (232448 - 32768) // 32784
    # fp8 128x128x128 has the same bytes per stage as bf16 128x128x64
    assert mk.max_pipeline_stages(H100_SMEM, 128, 128, 128, 8, 8) == 7
    # tiny tile: 4 B of tiles round up to 128, + 16 = 144; capacity 1000 rounds down to 896
    assert mk.max_pipeline_stages(1000, 1, 1, 1, 16, 16) == 896 // 144


def test_stage_count_errors():
    with pytest.raises(ValueError, match="carveout_bytes must be >= 0"):
        mk.max_pipeline_stages(H100_SMEM, 128, 128, 64, 16, 16, carveout_bytes=-1)
    with pytest.raises(ValueError, match="one stage .* must fit"):
        mk.max_pipeline_stages(H100_SMEM, 256, 256, 256, 16, 16)
    with pytest.raises(ValueError, match="tile_k must be a positive integer"):
        mk.max_pipeline_stages(H100_SMEM, 128, 128, 0, 16, 16)


@pytest.mark.parametrize("latency, compute, stages", [
    (700, 512, 3),  # HBM latency over one 128x128x64 bf16 MMA stage: two loads in flight
    (291, 512, 2),  # L2 latency: double buffering is enough
    (0, 512, 2),  # never fewer than two: one in use, one loading
    (1025, 512, 4),
])
def test_min_stages(latency, compute, stages):
    assert mk.min_pipeline_stages(latency, compute) == stages


def test_min_stages_errors():
    with pytest.raises(ValueError, match="compute_cycles_per_stage > 0"):
        mk.min_pipeline_stages(700, 0)


@pytest.mark.parametrize("online, loads, exps, passes", [(False, 3, 2, 3), (True, 2, 3, 2)])
def test_softmax_counts_follow_the_paper(online, loads, exps, passes):
    x = np.random.default_rng(1).standard_normal(50) * 30
    y, counts = mk.softmax_counts(x, online)
    ref = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    # paper sec. 2-3: safe softmax 4 accesses per element (3 loads, 1 store), online 3 (2 loads, 1 store)
    assert counts == {"loads": loads * 50, "stores": 50, "exps": exps * 50, "passes": passes}


def test_softmax_counts_large_scores_and_errors():
    y, _ = mk.softmax_counts([1000.0, 1000.0], online=True)  # no overflow: the running max shifts
    np.testing.assert_allclose(y, [0.5, 0.5])
    with pytest.raises(ValueError, match="one non-empty row"):
        mk.softmax_counts(np.zeros((2, 2)), online=False)


def test_csr_round_trip_and_spmv():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((7, 9)) * (rng.random((7, 9)) < 0.3)
    a[3] = 0  # an empty row
    indptr, indices, data = mk.csr_from_dense(a)
    assert indptr.tolist()[0] == 0 and indptr[-1] == np.count_nonzero(a) and indptr[4] == indptr[3]
    x = rng.standard_normal(9)
    np.testing.assert_allclose(mk.csr_spmv(indptr, indices, data, x), a @ x, atol=1e-12)
    with pytest.raises(ValueError, match="indptr must start at 0"):
        mk.csr_spmv(indptr[1:], indices, data, x)
    with pytest.raises(ValueError, match="must be a matrix"):
        mk.csr_from_dense(np.ones(3))


def test_csr_scalar_lane_use():
    assert mk.csr_scalar_lane_use(np.full(64, 5)) == 1.0
    # one row of 32 entries beside 31 rows of 1: the warp runs 32 steps on 32 lanes for 63 entries
    assert mk.csr_scalar_lane_use(np.array([32] + [1] * 31)) == 63 / (32 * 32)
    # 33 rows: the second warp has one row of 4 and 31 padded lanes
    assert mk.csr_scalar_lane_use(np.array([4] * 33)) == 132 / (4 * 32 + 4 * 32)
    with pytest.raises(ValueError, match="non-negative counts"):
        mk.csr_scalar_lane_use(np.array([-1, 2]))


def test_strides_and_strided_read():
    a = np.arange(24.0).reshape(2, 3, 4)
    assert mk.contiguous_strides(a.shape) == tuple(s // a.itemsize for s in a.strides)
    t = a.transpose(0, 2, 1)  # a view: NumPy changes the strides, not the memory
    strides = tuple(s // a.itemsize for s in t.strides)
    np.testing.assert_array_equal(mk.strided_read(a.ravel(), t.shape, strides), t)
    wrong = mk.strided_read(a.ravel(), t.shape, mk.contiguous_strides(t.shape))
    assert not np.array_equal(wrong, t)
    with pytest.raises(ValueError, match="one entry per dimension"):
        mk.strided_read(a.ravel(), (2, 3), (3,))
    with pytest.raises(ValueError, match="outside 0..23"):
        mk.strided_read(a.ravel(), (2, 3), (3, 1), offset=20)


def test_histogram_atomics_by_hand():
    ids = np.array([0, 0, 1, 1, 1, 2, 0, 0])  # two blocks of four items
    counts = mk.histogram_atomics(ids, num_bins=3, items_per_block=4)
    # block 0 touches bins {0, 1}, block 1 bins {1, 2, 0}: 5 global atomics instead of 8
    assert counts == {"direct": 8, "privatized": 5, "hottest_bin": 4, "blocks": 2}
    with pytest.raises(ValueError, match="bins in 0..2"):
        mk.histogram_atomics(np.array([3]), num_bins=3, items_per_block=4)
