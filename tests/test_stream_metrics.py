"""mha_kit.stream_metrics against vLLM's calculate_metrics written out by hand."""
import pytest

import mha_kit as mk


def test_one_token_a_chunk_tpot_equals_gap():
    # sent at 0, first chunk at 0.5, then 4 more 0.1 apart: TTFT 0.5, TPOT (0.9 - 0.5) / 4 = 0.1
    s = mk.stream_stats([(0.0, [0.5, 0.6, 0.7, 0.8, 0.9], [1] * 5)])
    assert s.ttft == pytest.approx(0.5)
    assert s.tpot == s.chunk_gap == s.token_gap == pytest.approx(0.1)


def test_request_weighted_against_gap_weighted():
    short = (0.0, [1.0, 1.2, 1.4], [1, 1, 1])  # 2 gaps of 0.2: TPOT 0.2
    long = (0.0, [1.0] + [1.0 + 0.05 * i for i in range(1, 9)], [1] * 9)  # 8 gaps of 0.05
    s = mk.stream_stats([short, long])
    assert s.tpot == pytest.approx((0.2 + 0.05) / 2)  # one value per request
    assert s.chunk_gap == pytest.approx((2 * 0.2 + 8 * 0.05) / 10)  # every gap counts once
    assert s.token_gap == pytest.approx((0.4 + 0.4) / 10)


def test_multi_token_chunks_split_tpot_from_chunk_gap():
    # three tokens a chunk every 0.06 s: 0.02 s a token, 0.06 s a gap
    s = mk.stream_stats([(0.0, [0.3, 0.36, 0.42], [3, 3, 3])])
    assert s.tpot == pytest.approx(0.12 / 8)
    assert s.chunk_gap == pytest.approx(0.06)


def test_rejects_bad_requests():
    with pytest.raises(ValueError, match="at least one request"):
        mk.stream_stats([])
    with pytest.raises(ValueError, match=">= 2 chunks"):
        mk.stream_stats([(0.0, [0.3], [1])])
    with pytest.raises(ValueError, match="increasing times"):
        mk.stream_stats([(0.0, [0.3, 0.2], [1, 1])])
