"""mrope_position_ids against Hugging Face's Qwen2VLModel.get_rope_index rule, worked by hand."""
import numpy as np
import pytest

import mha_kit as mk


def test_three_text_then_two_by_two_image_then_text():
    # text 0,1,2 on all axes; image at start 3: t = 3, h = 3,3,4,4, w = 3,4,3,4; next text at max + 1 = 5
    ids = mk.mrope_position_ids([("text", 3), ("vision", 1, 2, 2), ("text", 2)])
    expected = np.array([[0, 1, 2, 3, 3, 3, 3, 5, 6],
                         [0, 1, 2, 3, 3, 4, 4, 5, 6],
                         [0, 1, 2, 3, 4, 3, 4, 5, 6]])
    np.testing.assert_array_equal(ids, expected)


def test_text_only_is_plain_rope():
    ids = mk.mrope_position_ids([("text", 7)])
    for row in ids:
        np.testing.assert_array_equal(row, np.arange(7))


def test_video_frames_advance_time():
    ids = mk.mrope_position_ids([("vision", 2, 1, 3)])  # two frame groups of 1 x 3 tokens
    np.testing.assert_array_equal(ids[0], [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(ids[2], [0, 1, 2, 0, 1, 2])


def test_section_split_of_qwen2_vl():
    axes = mk.mrope_section_of_pairs([16, 24, 24])  # 64 pairs of a 128-wide head
    assert axes.shape == (64,)
    assert [int((axes == a).sum()) for a in range(3)] == [16, 24, 24]
    assert axes[0] == 0 and axes[16] == 1 and axes[40] == 2


def test_errors():
    with pytest.raises(ValueError, match="'text' or 'vision'"):
        mk.mrope_position_ids([("audio", 3)])
    with pytest.raises(ValueError, match="3 entries"):
        mk.mrope_section_of_pairs([32, 32])
    with pytest.raises(ValueError, match="at least one segment"):
        mk.mrope_position_ids([])
