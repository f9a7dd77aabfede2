"""M-RoPE position ids against Qwen2-VL's rule (arXiv:2409.12191, sec. 2.1) and Hugging Face's
``Qwen2VLModel.get_rope_index`` loop, ported below on token ids (merged from the r11a, r11b and r11c tests)."""
import numpy as np
import pytest

import mha_kit as mk

IMG = -1  # a placeholder token id for a merged visual token


def hf_get_rope_index(tokens, grids):
    """transformers' get_rope_index for one sequence, numpy port: text runs, then each grid at st_idx + text_len."""
    pos, st, k = [], 0, 0
    while IMG in tokens[st:]:
        ed = tokens.index(IMG, st)
        t, h, w = grids[k]
        k += 1
        text_len = ed - st
        st_idx = int(pos[-1].max()) + 1 if pos else 0
        pos.append(np.tile(np.arange(text_len), (3, 1)) + st_idx)
        t_index = np.repeat(np.arange(t), h * w)
        h_index = np.tile(np.repeat(np.arange(h), w), t)
        w_index = np.tile(np.arange(w), t * h)
        pos.append(np.stack([t_index, h_index, w_index]) + text_len + st_idx)
        st = ed + t * h * w
    if st < len(tokens):
        st_idx = int(pos[-1].max()) + 1 if pos else 0
        pos.append(np.tile(np.arange(len(tokens) - st), (3, 1)) + st_idx)
    ids = np.concatenate(pos, axis=1)
    return ids, int(ids.max()) + 1 - len(tokens)  # positions, mrope_position_deltas


def test_text_only_is_1d_rope():
    ids, nxt = mk.mrope_position_ids([("text", 5)])
    assert ids.tolist() == [list(range(5))] * 3
    assert nxt == 5


def test_hand_worked_two_by_two_image():
    # text 0,1,2 on all axes; image at start 3: t = 3, h = 3,3,4,4, w = 3,4,3,4; next text at max + 1 = 5
    ids, nxt = mk.mrope_position_ids([("text", 3), ("image", (1, 2, 2)), ("text", 2)])
    assert ids.tolist() == [[0, 1, 2, 3, 3, 3, 3, 5, 6],
                            [0, 1, 2, 3, 3, 4, 4, 5, 6],
                            [0, 1, 2, 3, 4, 3, 4, 5, 6]]
    assert nxt == 7


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


def test_video_temporal_id_per_frame_group():
    ids, _ = mk.mrope_position_ids([("video", (3, 1, 2))])
    assert ids[0].tolist() == [0, 0, 1, 1, 2, 2]
    assert ids[2].tolist() == [0, 1, 0, 1, 0, 1]
    assert np.all(ids[1] == 0)


@pytest.mark.parametrize("segments", [
    [("text", 3), ("image", (1, 4, 6)), ("text", 2)],
    [("image", (1, 2, 2)), ("text", 1), ("video", (2, 3, 2)), ("image", (1, 1, 5))],
    [("text", 10), ("image", (1, 36, 64)), ("text", 1)],
])
def test_matches_transformers_get_rope_index(segments):
    tokens, grids = [], []
    for kind, size in segments:
        if kind == "text":
            tokens += list(range(size))
        else:
            grids.append(size)
            tokens += [IMG] * int(np.prod(size))
    ref, delta = hf_get_rope_index(tokens, grids)
    ids, nxt = mk.mrope_position_ids(segments)
    np.testing.assert_array_equal(ids, ref)
    assert nxt - len(tokens) == delta  # vLLM's mrope_position_delta for decode


def test_errors():
    with pytest.raises(ValueError, match="a segment is"):
        mk.mrope_position_ids([("audio", 3)])
    with pytest.raises(ValueError, match="at least one segment"):
        mk.mrope_position_ids([])
    with pytest.raises(ValueError, match="height"):
        mk.mrope_position_ids([("image", (1, 0, 2))])
    with pytest.raises(ValueError, match="text length"):
        mk.mrope_position_ids([("text", 0)])
