"""Section transformer_block-no-norm of "The block around attention": is RMSNorm's gain important.

Recomputed without mha_kit: RMSNorm as x / sqrt(mean(x^2) + eps) (Zhang and Sennrich 2019, §3) and the
half-split RoPE rotation of pair (i, i + d/2) by m * 10000 ** (-2i / d) (RoFormer §3.2.2), by hand.
"""
import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("transformer_block")
SECTION = chapter_outputs.section(NB, "transformer_block-no-norm")
OUT = chapter_outputs.printed(NB, "rng_qk = np.random.default_rng(46)")


def rms_norm(x, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def rotate(x, m, d=64):
    theta = 10000.0 ** (-np.arange(d // 2) * 2.0 / d)
    c, s = np.cos(m * theta), np.sin(m * theta)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def test_gain_commutes_with_rope_only_when_shared_within_pairs():
    rng = np.random.default_rng(46)
    q = rms_norm(rng.standard_normal((1, 64)))
    g = rng.uniform(0.5, 2.0, 64)
    tied = np.concatenate([g[:32], g[:32]])
    free_ok = np.allclose(rotate(q * g, 37), g * rotate(q, 37))
    tied_ok = np.allclose(rotate(q * tied, 37), tied * rotate(q, 37))
    assert (free_ok, tied_ok) == (False, True)
    assert f"gain per dimension      : RoPE(gamma * q) == gamma * RoPE(q): {free_ok}" in OUT
    assert f"gain shared within pairs: RoPE(gamma * q) == gamma * RoPE(q): {tied_ok}" in OUT
    x = rng.standard_normal((1, 64))
    moves_back = np.allclose(rms_norm(x * g), g * rms_norm(x))  # the norm is not linear: the gain cannot pass it
    assert moves_back is False and f"RMSNorm(gamma * x) == gamma * RMSNorm(x): {moves_back}" in OUT


def test_tied_head_copy():
    gib = 128256 * 2048 * 2 / 1024**3  # Llama 3.2 1B vocab x hidden in bf16 (llama32config)
    assert chapter_outputs.glued(NB, "tb_tied_head_copy_gib") == f"{gib:.2f} GiB" and 0.4 < gib < 0.6
    assert "{glue:text}`tb_tied_head_copy_gib`" in SECTION and "tied" in SECTION


def test_fold_into_linear_is_exact_for_any_gain():
    rng = np.random.default_rng(0)
    x, g, w = rng.standard_normal((4, 64)), rng.uniform(0.5, 2.0, 64), rng.standard_normal((64, 32))
    assert np.allclose((rms_norm(x) * g) @ w, rms_norm(x) @ (g[:, None] * w))


def test_verdict_is_cited_and_linked():
    chapter_outputs.assert_cited(SECTION, ["nanogptoptim", "kovaleva2021busters", "wei2022outlier", "hfqwen3attn",
                                           "llama32config"])
    assert "0.0001%" in SECTION and "{ref}`softmax_numerics-qk-norm`" in SECTION
    assert "Zeroing the few outlier entries of a trained LayerNorm gain degrades the\nmodel; folding it is exact." in SECTION
    assert "For QK-norm the reason is the\nrotation" not in SECTION and "normalisation is not linear" in SECTION
