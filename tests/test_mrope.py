"""mha_kit.mrope_position_ids against Qwen2-VL's rule (Wang et al. 2024, sec. 2.1; transformers get_rope_index)."""
import numpy as np
import pytest

import mha_kit as mk


def test_text_only_is_1d_rope():
    ids, nxt = mk.mrope_position_ids([("text", 5)])
    assert ids.tolist() == [list(range(5))] * 3 and nxt == 5


def test_image_then_text_starts_after_the_largest_id():
    # transformers' rule: image ids = stack(t, h, w indices) + st_idx; the next text starts at max + 1
    ids, nxt = mk.mrope_position_ids([("text", 3), ("image", 1, 4, 6), ("text", 2)])
    img = ids[:, 3:27]
    assert (img[0] == 3).all()  # one temporal id for the whole image
    assert img[1].tolist() == [3 + r for r in range(4) for _ in range(6)]  # height: the row
    assert img[2].tolist() == [3 + c for _ in range(4) for c in range(6)]  # width: the column
    assert ids[:, 27].tolist() == [9, 9, 9]  # 3 + max(4, 6) - 1 + 1, not the token index 27
    assert nxt == 11 and ids.shape == (3, 29)


def test_video_frames_advance_the_temporal_id():
    ids, _ = mk.mrope_position_ids([("image", 2, 1, 2)])
    assert ids.tolist() == [[0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 1]]


@pytest.mark.parametrize("seg", [("text", -1), ("image", 1, 0, 2), ("audio", 3), ("image", 2, 2)])
def test_errors(seg):
    with pytest.raises(ValueError, match="a segment must be"):
        mk.mrope_position_ids([seg])


def test_empty():
    ids, nxt = mk.mrope_position_ids([])
    assert ids.shape == (3, 0) and ids.dtype == np.int64 and nxt == 0
