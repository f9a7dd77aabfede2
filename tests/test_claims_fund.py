"""Numbers that fix4fund's sections quote, recomputed from their definitions (products written out).

Chapters: positions (added vs concatenated), position_encodings (GLM 2D ids), cross_and_masked_attention
(mask bytes, causal reach), rope_scaling (DCA, LogN), long_context_structure (efficient family),
mla_serving (MLA against LoRA), decoding_sampling (training logits), multi_tenant_serving (ViT windows),
attention_backends (packing).
"""

import numpy as np
import pytest

import mha_kit as mk


def test_mask_bytes_at_128k():
    n = 131_072
    assert n * n == 2**34  # bytes of a bool mask: 16 GiB
    assert mk.dense_mask_bytes(n, 1) == 16 * 1024**3
    assert mk.dense_mask_bytes(n, 2) == 32 * 1024**3


def test_causal_reach_and_last_token():
    n = 8
    reach = [sum(1 for i in range(n) if i >= j) for j in range(n)]  # queries i that see key j
    assert reach == [8, 7, 6, 5, 4, 3, 2, 1]
    assert mk.causal_mask(n).sum(axis=0).tolist() == reach


def test_dca_small_example_by_the_rule():
    n, c, local = 24, 8, 2
    s = c - local
    kept = total = 0
    biggest = 0
    for i in range(n):
        for j in range(i + 1):
            if i // s == j // s:
                d = i % s - j % s
            elif i // s == j // s + 1:
                d = min(i % s + s, c) - j % s
            else:
                d = min(2 * s - 1, c) - j % s
            biggest = max(biggest, d)
            kept += d == i - j
            total += 1
    assert biggest == 8
    assert f"{kept / total:.1%}" == "46.0%"
    assert mk.dca_distances(n, c, local)[-1].tolist() == [8, 7, 6, 5, 4, 3] * 3 + [5, 4, 3, 2, 1, 0]


def test_qwen_logn_and_1m_ratio():
    assert mk.logn_scale(8192, 2048) == pytest.approx(13 / 11)  # log2 8192 / log2 2048
    assert mk.logn_scale(32768, 2048) == pytest.approx(15 / 11)
    assert 2**20 / 262_144 == 4


def test_mla_against_lora_deepseek_v3():
    d, h, d_c, nope, rope, dv = 7168, 128, 512, 128, 64, 128  # DeepSeek-V3 config
    full = d * h * nope + d * h * dv
    mla = d * d_c + d_c * h * nope + d_c * h * dv
    assert round(full / 1e6, 1) == 234.9 and round(mla / 1e6, 1) == 20.4
    assert f"{mla / full:.1%}" == "8.7%"
    assert h * (nope + rope + dv) == 40_960
    assert 16 * (7168 + 128 * 128) == 376_832


def test_training_logits_qwen25():
    v = mk.MODEL_FACTS["qwen2.5-7b"].vocab_size
    assert v == 152_064
    b = 8 * 4096 * v * 4
    assert f"{b / 1024**3:.1f}" == "18.6"
    assert round(1024 * v * 4 / 1024**2) == 594
    assert f"{b / 8 / 1024**3:.1f}" == "2.3"


def test_vit_window_costs():
    c, m = 1280, 8
    for side, glob, win in ((448, 9, 7), (896, 70, 28), (1792, 795, 110)):
        g = side // 14
        hw = g * g
        full = 4 * hw * c * c + 2 * hw * hw * c
        windowed = 4 * hw * c * c + 2 * m * m * hw * c
        assert (round(full / 1e9), round(windowed / 1e9)) == (glob, win)
    assert f"{795.45 / 110.06:.1f}" == "7.2"


def test_packing_padding_share():
    lengths = [300, 120, 500, 104]
    assert sum(lengths) == 1024
    assert f"{1 - 1024 / (4 * 500):.1%}" == "48.8%"
    cu, pos = mk.pack_documents(lengths)
    assert np.flatnonzero(pos == 0).tolist() == cu[:-1].tolist() == [0, 300, 420, 920]


def test_efficient_shares_at_4096():
    n = 4096
    assert f"{n * 256 / n**2:.1%}" == "6.2%"  # Linformer k = 256 (6.25% shown as 6.2%)
    assert f"{(2 * n * 64 + 64**2) / n**2:.1%}" == "3.1%"  # Nystromformer, 64 landmarks
    assert f"{n * 513 / n**2:.1%}" == "12.5%"  # Longformer window 2 x 256 + 1


def test_concatenation_is_a_sum():
    rng = np.random.default_rng(3)
    x, p, w = rng.standard_normal(5), rng.standard_normal(3), rng.standard_normal((4, 8))
    assert np.allclose(w @ np.concatenate([x, p]), w[:, :5] @ x + w[:, 5:] @ p)
