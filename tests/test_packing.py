"""mha_kit.packing against hand-worked values (flash-attention's cu_seqlens convention)."""
import numpy as np
import pytest

import mha_kit as mk


def test_dense_mask_bytes_128k():
    n = 128 * 1024
    assert mk.dense_mask_bytes(n, 1) == 16 * 2**30  # bool: n**2 bytes = 2**34
    assert mk.dense_mask_bytes(n, 2) == 32 * 2**30  # additive bf16
    assert mk.dense_mask_bytes(4, 1, batch=2, heads=3) == 96


def test_pack_documents_cu_seqlens_and_positions():
    cu, pos = mk.pack_documents([3, 2, 4])
    assert cu.tolist() == [0, 3, 5, 9] and cu.dtype == np.int32  # flash_attn_varlen_func wants int32
    assert pos.tolist() == [0, 1, 2, 0, 1, 0, 1, 2, 3]


def test_padding_fraction():
    assert mk.padding_fraction([4, 4]) == 0.0
    assert mk.padding_fraction([1, 3]) == pytest.approx(1 - 4 / 6)


@pytest.mark.parametrize("call, match", [
    (lambda: mk.dense_mask_bytes(0, 1), "n must be a positive integer"),
    (lambda: mk.dense_mask_bytes(8, 1.0), "bytes_per_element"),
    (lambda: mk.pack_documents([]), "at least one document"),
    (lambda: mk.pack_documents([3, 0]), r"lengths\[1\]"),
    (lambda: mk.padding_fraction([]), "at least one document"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
