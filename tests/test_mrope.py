"""M-RoPE position ids against Qwen2-VL's rule (arXiv:2409.12191, sec. 2.1)."""
import numpy as np
import pytest

import mha_kit as mk


def test_text_only_is_1d_rope():
    ids, nxt = mk.mrope_position_ids([("text", 5)])
    assert ids.tolist() == [list(range(5))] * 3
    assert nxt == 5


def test_image_after_text_and_next_text():
    # 3 text tokens, a 1 x 2 x 3 image (2 rows, 3 columns), 2 text tokens
    ids, nxt = mk.mrope_position_ids([("text", 3), ("image", (1, 2, 3)), ("text", 2)])
    t, h, w = ids
    assert t[3:9].tolist() == [3] * 6  # one temporal id for the whole image
    assert h[3:9].tolist() == [3, 3, 3, 4, 4, 4]  # rows
    assert w[3:9].tolist() == [3, 4, 5, 3, 4, 5]  # columns
    assert t[9:].tolist() == [6, 7] == h[9:].tolist() == w[9:].tolist()  # restart at max id + 1 = 6
    assert nxt == 8
    assert ids.shape == (3, 11)


def test_video_temporal_id_per_frame():
    ids, _ = mk.mrope_position_ids([("video", (3, 1, 2))])
    assert ids[0].tolist() == [0, 0, 1, 1, 2, 2]
    assert ids[2].tolist() == [0, 1, 0, 1, 0, 1]
    assert np.all(ids[1] == 0)


def test_errors():
    with pytest.raises(ValueError, match="a segment is"):
        mk.mrope_position_ids([("audio", 3)])
    with pytest.raises(ValueError, match="at least one segment"):
        mk.mrope_position_ids([])
    with pytest.raises(ValueError, match="height"):
        mk.mrope_position_ids([("image", (1, 0, 2))])
