"""internvl_image_tokens against InternVL 1.5 sec. 3.2 and fastv_flops_ratio against FastV sec. 4."""
import pytest

import mha_kit as mk


def test_internvl_tokens_match_the_paper():
    assert mk.internvl_image_tokens(1) == 256  # "a 448 x 448 image is represented by 256 visual tokens"
    assert mk.internvl_image_tokens(12) == 13 * 256  # 12 tiles and the thumbnail
    assert mk.internvl_image_tokens(40, thumbnail=False) == 40 * 256
    assert mk.internvl_image_tokens(1, shuffle=1) == (448 // 14) ** 2  # 1,024 ViT patches


def test_fastv_ratio_written_out():
    d, m, T, K = 5120, 13824, 40, 2  # LLaVA-1.5-13B's language model (Vicuna-13B)
    n, kept = 40 + 576, 40 + 288

    def layer(x):
        return 4 * x * d * d + 2 * x * x * d + 2 * x * d * m

    expect = (K * layer(n) + (T - K) * layer(kept)) / (T * layer(n))
    assert mk.fastv_flops_ratio(40, 576, d, m, T, K, 0.5) == pytest.approx(expect, rel=1e-12)
    assert 0.40 < 1 - expect < 0.50  # the paper: about 45% fewer FLOPs at K=2, R=50%
    assert mk.fastv_flops_ratio(40, 576, d, m, T, T, 0.5) == 1.0  # prune after the last layer: no saving


def test_vision_errors():
    with pytest.raises(ValueError, match="multiple of patch"):
        mk.internvl_image_tokens(1, tile=450)
    with pytest.raises(ValueError, match="num_tiles, patch and shuffle must be >= 1"):
        mk.internvl_image_tokens(0)
    with pytest.raises(ValueError, match=r"k must lie in \[0, layers=40\]"):
        mk.fastv_flops_ratio(10, 576, 5120, 13824, 40, 41, 0.5)
    with pytest.raises(ValueError, match=r"r must lie in \[0, 1\]"):
        mk.fastv_flops_ratio(10, 576, 5120, 13824, 40, 2, 1.5)
