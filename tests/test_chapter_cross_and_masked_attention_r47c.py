"""Section cross_and_masked_attention-sd-unet of "Self-, cross- and masked attention".

Stable Diffusion v1's SpatialTransformer (CompVis/stable-diffusion at 21f890f, ldm/modules/attention.py and
configs/stable-diffusion/v1-inference.yaml): the shapes of the toy walk, recomputed with einops-style
reshapes written out and a softmax of our own (not mha_kit), and the real stage table, from the config's
constants (model_channels 320, channel_mult 1, 2, 4, 4, attention at ds 1, 2, 4, num_res_blocks 2,
8 heads, CLIP's 77 tokens, a 512 // 8 = 64 latent) with the blocks counted as the U-Net builds them.
"""
import numpy as np
import pytest

import chapter_outputs

LABEL = "cross_and_masked_attention-sd-unet"
LATENT, CH, HEADS, TEXT = 512 // 8, 320, 8, 77
# (side, channels, SpatialTransformers): down path 2 + up path 3 at ds 1, 2, 4; the middle block at ds 8
STAGES = [(64, 320, 5), (32, 640, 5), (16, 1280, 5), (8, 1280, 1)]


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("cross_and_masked_attention")


def test_toy_walk_shapes_and_per_pixel_cross_attention(nb):
    out = chapter_outputs.printed(nb, "fmap = rng.standard_normal((B, C, H, W))")
    assert "feature map (2, 8, 4, 4) -> tokens (2, 16, 8) = (B, HW, C)" in out
    assert "text (2, 5, 12) -> keys and values (2, 5, 8) = (B, M, inner)" in out
    assert "self-attention weights (2, 2, 16, 16) = (B, h, HW, HW)" in out
    assert "cross-attention weights (2, 2, 16, 5) = (B, h, HW, M)" in out
    assert "back to a map (2, 8, 4, 4) ; the reshape undoes itself: True" in out
    assert "with proj_out at its zero init the stage returns its input: True" in out
    assert "cross-attention outputs that move when pixel 5 changes: [5]" in out


def test_cross_attention_is_per_query_independently():
    """A row of softmax(q K^T) V depends on its own query only: recomputed without mha_kit."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(16, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 4))

    def attend(qq):
        s = qq @ k.T / 2.0
        w = np.exp(s - s.max(axis=1, keepdims=True))
        return (w / w.sum(axis=1, keepdims=True)) @ v

    q2 = q.copy()
    q2[5] += 1.0
    moved = np.flatnonzero(np.abs(attend(q2) - attend(q)).max(axis=1) > 0)
    assert moved.tolist() == [5]
    b, c, h, w = 2, 8, 4, 4
    fmap = np.arange(b * c * h * w).reshape(b, c, h, w)
    tokens = np.stack([[fmap[i, :, p // w, p % w] for p in range(h * w)] for i in range(b)])  # b (h w) c
    assert tokens.shape == (2, 16, 8)
    assert np.array_equal(tokens, fmap.reshape(b, c, h * w).transpose(0, 2, 1))


def test_stage_table(nb):
    out = chapter_outputs.printed(nb, "sd_latent = 512 // 8")
    for side, ch, count in STAGES:
        hw = side * side
        line = (f"{f'{side}x{side}':>8}{hw:>11,}{ch:>6}{ch // HEADS:>8}{count:>8}{hw * hw:>13,}{hw * TEXT:>13,}"
                f"{hw / TEXT:>7.1f}")
        assert line in out, line
    assert f"SpatialTransformers in all: {sum(s[2] for s in STAGES)}" in out
    assert sum(s[2] for s in STAGES) == 16


def test_bytes_and_resolution_growth(nb):
    out = chapter_outputs.printed(nb, "sd_latent = 512 // 8")
    hw = LATENT * LATENT
    assert hw == 4096
    self_bytes, cross_bytes = 2 * HEADS * hw * hw * 2, 2 * HEADS * hw * TEXT * 2
    assert self_bytes == 512 * 2**20
    assert f"{self_bytes:,} B (512 MiB) of scores; one attn2: {cross_bytes:,} B" in out
    hw96 = 96 * 96
    assert f"at 768x768 ({hw96:,} tokens): self-attention scores x{(hw96 / hw) ** 2:.2f}, cross-attention x2.25" in out
    expect = {"cma_sd_tokens": "4,096", "cma_sd_self": f"{4096 ** 2:,}", "cma_sd_cross": f"{4096 * 77:,}",
              "cma_sd_ratio": f"{4096 / 77:.1f}", "cma_sd_self_bytes": "512 MiB", "cma_sd_blocks": "16",
              "cma_sd_768_self": "5.06", "cma_sd_768_cross": "2.25"}
    for key, value in expect.items():
        assert chapter_outputs.glued(nb, key) == value, key


def test_section_has_box_dropdown_and_citations(nb):
    text = chapter_outputs.section(nb, LABEL, end="cross_and_masked_attention-decoder-only")
    assert text.startswith(f"({LABEL})=\n### ")
    assert "```{admonition} In the interview\n:class: tip\n**[M]" in text
    assert ":class: dropdown" in text
    for locator in ("compvissd{ldm/modules/attention.py, SpatialTransformer.forward",
                    "compvissd{ldm/modules/encoders/modules.py, FrozenCLIPEmbedder",
                    "{ref}`serving_operations-diffusion`", "{ref}`attention_backends-xformers-memory-efficient`"):
        assert locator in text, locator
