"""mx_bytes against OCP MX v1.0 and FlashMLA's byte count; shuffle_weight_16x16 against AITER's view/permute."""
import numpy as np
import pytest

import mha_kit as mk


def test_mx_bytes_by_hand():
    assert mk.mx_bytes(576) == 576 // 2 + 576 // 32 == 306  # the GPU MODE task's MXFP4 latent + rope
    assert mk.mx_bytes(512) + 64 * 2 == 256 + 16 + 128 == 400  # rotary key kept in bf16
    assert mk.mx_bytes(512, bits=8, block=128, scale_bytes=4) + 64 * 2 == 656  # FlashMLA's FP8 layout
    assert mk.mx_bytes(16, block=16) == 9  # NVFP4: 8 bytes of E2M1 + one E4M3 scale
    assert mk.mx_bytes(34) == 17 + 2  # a partial block still needs its scale


def test_mx_bytes_errors():
    with pytest.raises(ValueError, match="whole bytes"):
        mk.mx_bytes(3)
    with pytest.raises(ValueError, match="num_values > 0"):
        mk.mx_bytes(0)


def test_shuffle_matches_aiter_layout():
    w = np.arange(32 * 64, dtype=np.int64).reshape(32, 64)  # values encode (row, byte)
    s = mk.shuffle_weight_16x16(w).ravel()
    # The first 256 stored bytes are rows 0..15, bytes 0..15: one tile, row after row.
    assert (s[:256] == np.concatenate([w[r, :16] for r in range(16)])).all()
    assert (s[256:512] == np.concatenate([w[r, 16:32] for r in range(16)])).all()
    assert (s[512:768] == np.concatenate([w[r, 32:48] for r in range(16)])).all()
    assert s[1024] == w[16, 0]  # the next 16 rows start after the first row-block's 16 x 64 bytes
    assert sorted(s) == sorted(w.ravel())  # a permutation


def test_shuffle_errors():
    with pytest.raises(ValueError, match="multiple of 16"):
        mk.shuffle_weight_16x16(np.zeros((8, 32)))
    with pytest.raises(ValueError, match="of 32"):
        mk.shuffle_weight_16x16(np.zeros((16, 48)))
