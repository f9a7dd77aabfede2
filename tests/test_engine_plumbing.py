"""persistent_batch_update against vLLM V1's _update_states + InputBatch.condense, worked by hand, and
detokenize_stream against detokenize_incrementally's rule on real UTF-8 bytes."""
import pytest

import mha_kit as mk


def _apply(num_rows, finished, num_new, upd):
    # replay the update on row labels and check the live rows end up contiguous
    rows = {r: f"old{r}" for r in range(num_rows) if r not in set(finished)}
    for i, r in enumerate(upd.new_rows):
        rows[r] = f"new{i}"
    for src, dst in upd.moves:
        assert dst not in rows and src in rows
        rows[dst] = rows.pop(src)
    return rows


def test_condense_hand_worked():
    # 8 rows, rows 1, 4 and 6 finish: row 7 -> 1, then 6 is a hole so row 5 -> 4; 5 rows remain
    upd = mk.persistent_batch_update(8, [6, 1, 4])
    assert upd.moves == [(7, 1), (5, 4)] and upd.num_rows == 5 and upd.new_rows == []
    assert sorted(_apply(8, [1, 4, 6], 0, upd)) == list(range(5))


def test_new_requests_fill_smallest_holes_first_then_append():
    upd = mk.persistent_batch_update(8, [1, 4, 6], num_new=1)
    assert upd.new_rows == [1] and upd.moves == [(7, 4)] and upd.num_rows == 6
    upd = mk.persistent_batch_update(8, [1], num_new=3)  # one hole, two appended at 8 and 9
    assert upd.new_rows == [1, 8, 9] and upd.moves == [] and upd.num_rows == 10
    assert sorted(_apply(8, [1], 3, upd)) == list(range(10))


def test_condense_edge_cases():
    assert mk.persistent_batch_update(4, [0, 1, 2, 3]) == ([], [], 0)  # empty batch
    assert mk.persistent_batch_update(5, [4]) == ([], [], 4)  # last row: nothing to move
    upd = mk.persistent_batch_update(10, [0, 2, 3, 9], num_new=2)
    assert sorted(_apply(10, [0, 2, 3, 9], 2, upd)) == list(range(upd.num_rows)) and upd.num_rows == 8


def test_batch_update_errors():
    with pytest.raises(ValueError, match=r"finished rows must lie in \[0, 4\)"):
        mk.persistent_batch_update(4, [4])
    with pytest.raises(ValueError, match="must be >= 0"):
        mk.persistent_batch_update(4, [], num_new=-1)


def test_detokenize_holds_back_split_characters():
    e_acute, smile = "é".encode(), "😀".encode()  # 2 and 4 UTF-8 bytes
    pieces = [b"caf", e_acute[:1], e_acute[1:], b" ", smile[:2], smile[2:], b"!"]
    out = mk.detokenize_stream(pieces)
    assert out == ["caf", "", "é", " ", "", "😀", "!"]
    assert "".join(out) == b"".join(pieces).decode("utf-8")
    naive = "".join(p.decode("utf-8", errors="replace") for p in pieces)
    assert "\ufffd" in naive and naive != "".join(out)  # token-by-token decoding breaks both


def test_detokenize_errors():
    with pytest.raises(ValueError, match="every piece must be bytes"):
        mk.detokenize_stream(["a"])
