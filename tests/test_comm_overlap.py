"""chunked_overlap_time against an event-by-event schedule of the chunks."""
import pytest

import mha_kit as mk


def _schedule(k, c, p):
    copy_done = [0.0] + [i * c for i in range(1, p)]  # shard 0 is local; remote shards arrive one by one
    end = 0.0
    for i in range(p):
        end = max(end, copy_done[i]) + k
    return end


@pytest.mark.parametrize("compute, comm", [(8.0, 2.0), (2.0, 8.0), (7.0, 7.0 * 7 / 8)])
def test_matches_schedule(compute, comm):
    serial, overlapped = mk.chunked_overlap_time(compute, comm, 8)
    assert serial == compute + comm
    assert overlapped == pytest.approx(_schedule(compute / 8, comm / 7, 8))
    assert overlapped >= max(compute, comm)


def test_compute_bound_hides_comm():
    assert mk.chunked_overlap_time(8.0, 1.0, 8)[1] == pytest.approx(8.0)


def test_errors():
    with pytest.raises(ValueError, match="world_size >= 2"):
        mk.chunked_overlap_time(1.0, 1.0, 1)
    with pytest.raises(ValueError, match="non-negative"):
        mk.chunked_overlap_time(-1.0, 1.0, 4)
