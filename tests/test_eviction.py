"""H2O and SnapKV selections, cross-layer and YOCO cache bytes (mha_kit/eviction.py)."""
import numpy as np
import pytest

import mha_kit as mk


def test_h2o_keeps_recent_and_heaviest_by_hand():
    probs = np.array([[0.5, 0.1, 0.1, 0.2, 0.1, 0.0],
                      [0.3, 0.0, 0.4, 0.1, 0.1, 0.1]])  # accumulated: 0.8, 0.1, 0.5, 0.3 | recent 4, 5
    assert mk.h2o_keep(probs, heavy=2, recent=2).tolist() == [0, 2, 4, 5]
    assert mk.h2o_keep(probs, heavy=0, recent=3).tolist() == [3, 4, 5]


def test_snapkv_keeps_window_and_voted_block():
    rng = np.random.default_rng(0)
    d_h = 16
    k = rng.normal(size=(40, d_h)) * 0.1
    target = rng.normal(size=d_h)
    k[10:13] = target * 3  # three neighbouring tokens the window queries look at
    q_window = np.tile(target, (4, 1))
    kept = mk.snapkv_keep(q_window, k, budget=3, kernel=1)
    assert kept.tolist() == [10, 11, 12, 36, 37, 38, 39]


def test_cross_layer_bytes_llama3_8b():
    cfg = mk.PRESETS["llama-3-8b"]
    per_layer = 2 * 8 * 128 * 2  # K and V, h_kv, d_h, bf16 bytes
    assert mk.cross_layer_cache_bytes(cfg, 1) == 32 * per_layer == mk.kv_cache_bytes_per_token(cfg)
    assert mk.cross_layer_cache_bytes(cfg, 2) == 16 * per_layer
    assert mk.cross_layer_cache_bytes(cfg, 3) == 11 * per_layer  # ceil(32 / 3)


def test_yoco_bytes_by_hand():
    cfg = mk.PRESETS["llama-3-8b"]
    per_layer = 2 * 8 * 128 * 2
    assert mk.yoco_cache_bytes(cfg, 65536, 1024) == (16 * 1024 + 65536) * per_layer
    assert mk.yoco_cache_bytes(cfg, 512, 1024) == (16 * 512 + 512) * per_layer  # window longer than context


def test_errors():
    probs = np.full((1, 4), 0.25)
    with pytest.raises(ValueError, match=r"heavy \+ recent \(3 \+ 2\) must be at most the number of keys \(4\)"):
        mk.h2o_keep(probs, 3, 2)
    with pytest.raises(ValueError, match=r"recent \(5\) must be at most the number of keys \(4\)"):
        mk.h2o_keep(probs, 0, 5)
    with pytest.raises(ValueError, match="kernel must be a positive odd int, got 4"):
        mk.snapkv_keep(np.ones((1, 2)), np.ones((5, 2)), 1, kernel=4)
    with pytest.raises(ValueError, match="sharing_factor must be a positive int"):
        mk.cross_layer_cache_bytes(mk.PRESETS["llama-3-8b"], 0)
