"""The best-of-N section of book/kv_cache_basics.ipynb, recomputed with the products written out."""
import math

import pytest

BW, PEAK = 3.35e12, 989e12  # H100 SXM
P8 = 8_030_261_248  # Llama 3 8B parameters
KV_TOKEN = 32 * 2 * 8 * 128 * 2  # 32 layers, K and V, 8 KV heads of 128, bf16 = 131,072 bytes


def test_cache_blocks_shared_and_not():
    prompt, answer, block, n = 2000, 500, 16, 64
    unshared = n * math.ceil((prompt + answer) / block)  # 64 x 157 blocks
    shared = prompt // block + n * math.ceil((prompt % block + answer) / block)  # 125 prompt blocks + 64 x 32
    assert round(unshared * block * KV_TOKEN / 2**30, 1) == 19.6
    assert round(shared * block * KV_TOKEN / 2**30, 1) == 4.2


def test_decode_floor_one_sample_and_64():
    weights = P8 * 2
    one = sum((weights + KV_TOKEN * (2000 + t + 1)) / BW for t in range(500))
    assert one == pytest.approx(2.44, abs=0.01)
    plain_64 = sum((weights + KV_TOKEN * (64 * (2000 + t) + 64)) / BW for t in range(500))
    casc_64 = sum((weights + KV_TOKEN * (2000 + 64 * t + 64)) / BW for t in range(500))
    assert plain_64 == pytest.approx(5.21, abs=0.01) and casc_64 == pytest.approx(2.75, abs=0.01)
