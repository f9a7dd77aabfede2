"""mha_kit.parallel_algos against its sources: GPU Gems 3 ch. 39, Blelloch 1990, Brent 1974, DeepSeek-V3 Table 2,
CUTLASS's grouped problem visitor."""
import numpy as np
import pytest

import mha_kit as mk


def test_scans_match_cumsum_and_the_gpu_gems_counts():
    x = np.array([3, 1, 7, 0, 4, 1, 6, 3])  # GPU Gems 3 ch. 39's example array
    inc, steps, adds = mk.hillis_steele_scan(x)
    assert inc.tolist() == np.cumsum(x).tolist() and steps == 3
    assert adds == 8 * 3 - (8 - 1)  # n log n - (n - 1)
    exc, bsteps, badds = mk.blelloch_scan(x)
    assert exc.tolist() == [0, 3, 4, 11, 11, 15, 16, 22]  # the chapter's figure 39-4 result
    assert (bsteps, badds) == (6, 2 * (8 - 1))
    big = np.random.default_rng(0).integers(0, 9, 1024)
    assert mk.blelloch_scan(big)[0].tolist() == (np.cumsum(big) - big).tolist()
    with pytest.raises(ValueError, match="power of two"):
        mk.blelloch_scan(np.arange(6))
    with pytest.raises(ValueError, match="power of two"):
        mk.hillis_steele_scan(np.zeros((2, 2)))


def test_stream_compaction_keeps_order():
    kept, slots = mk.stream_compact(np.array([5, 6, 7, 8]), np.array([True, False, True, True]))
    assert kept.tolist() == [5, 7, 8] and slots.tolist() == [0, 1, 1, 2]
    with pytest.raises(ValueError, match="bool array"):
        mk.stream_compact(np.arange(3), np.array([1, 0, 1]))


def test_brent_bound():
    assert mk.brent_time_bound(1023, 10, 1) == 1023 + 10
    assert mk.brent_time_bound(1024, 10, 1024) == 1 + 10
    with pytest.raises(ValueError, match="cannot exceed the work"):
        mk.brent_time_bound(5, 6, 2)


def test_pipeline_bubbles_are_deepseek_v3_table_2():
    f, b, w, fb = 1.0, 2.0, 1.0, 2.5
    assert mk.pipeline_schedule_bubble("1f1b", 8, f, b) == 7 * 3
    assert mk.pipeline_schedule_bubble("zb1p", 8, f, b, w) == 7 * (3 - 2)
    assert mk.pipeline_schedule_bubble("dualpipe", 8, f, b, w, fb) == 3 * (2.5 + 2 - 3)
    with pytest.raises(ValueError, match="even number of stages"):
        mk.pipeline_schedule_bubble("dualpipe", 7, f, b, w)
    with pytest.raises(ValueError, match="schedule must be"):
        mk.pipeline_schedule_bubble("gpipe", 4, f, b)


def test_grouped_gemm_tiles_follow_the_problem_visitor():
    problem_of_tile, starts = mk.grouped_gemm_tiles([[100, 256, 64], [0, 256, 64], [300, 128, 64]], 128, 128)
    # ceil(100/128)*2 = 2, empty problem 0 tiles, ceil(300/128)*1 = 3 (host_precompute's tile count)
    assert starts.tolist() == [0, 2, 2, 5]
    assert problem_of_tile.tolist() == [0, 0, 2, 2, 2]
    assert problem_of_tile.dtype == np.intp
    with pytest.raises(ValueError, match=r"\(G, 3\)"):
        mk.grouped_gemm_tiles([[1, 2]], 128, 128)


def test_nvlink5_record():
    assert mk.LINKS["nvlink5"].bytes_per_s == 900e9  # 1.8 TB/s both ways
    assert 72 * 2 * mk.LINKS["nvlink5"].bytes_per_s == pytest.approx(130e12, rel=0.01)  # NVL72's 130 TB/s
