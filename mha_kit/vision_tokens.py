"""How many visual tokens an image costs a language model, and what compressing them saves.

``internvl_image_tokens``: InternVL 1.5 cuts an image into 448x448 tiles (1 to 12 in training, up to
40 at test time), adds a 448x448 thumbnail of the whole image when there is more than one tile, and
its ViT's 14-pixel patches give (448/14)^2 = 1,024 features per tile that a pixel shuffle merges
2x2 into 256 tokens (Chen et al. 2024, arXiv:2404.16821, sec. 3.2).

``fastv_flops_ratio``: FastV keeps every token for the first ``k`` layers, then drops the fraction
``r`` of image tokens with the least attention; its sec. 4 counts one layer's FLOPs as
``4 n d^2 + 2 n^2 d + 2 n d m`` (n tokens, hidden size d, FFN size m) (Chen et al. 2024,
arXiv:2403.06764).

Book: chapter "Many models, adapters and tenants", section "Compressing visual tokens".
"""
from __future__ import annotations


def internvl_image_tokens(num_tiles, tile=448, patch=14, shuffle=2, thumbnail=True) -> int:
    """Visual tokens of one image cut into ``num_tiles`` tiles, InternVL 1.5 style.

    Parameters
    ----------
    num_tiles : int
        Tiles of ``tile x tile`` pixels the image is cut into (>= 1).
    tile, patch : int
        Tile side and ViT patch side in pixels; ``tile`` must be a multiple of ``patch * shuffle``.
    shuffle : int
        Pixel-shuffle factor: ``shuffle x shuffle`` neighbouring features become one token.
    thumbnail : bool
        Add one thumbnail tile of the whole image when ``num_tiles > 1``.
    """
    if num_tiles < 1 or patch < 1 or shuffle < 1:
        raise ValueError(f"num_tiles, patch and shuffle must be >= 1, got {num_tiles}, {patch}, {shuffle}")
    if tile % (patch * shuffle):
        raise ValueError(f"tile ({tile}) must be a multiple of patch * shuffle ({patch * shuffle})")
    per_tile = (tile // (patch * shuffle)) ** 2  # (448/14)^2 / 4 = 256
    return (num_tiles + (thumbnail and num_tiles > 1)) * per_tile


def fastv_flops_ratio(n_text, n_image, hidden, ffn, layers, k, r) -> float:
    """Fraction of the prefill FLOPs that remain when FastV prunes image tokens after layer ``k``.

    Parameters
    ----------
    n_text, n_image : int
        Text and image tokens of the prompt.
    hidden, ffn, layers : int
        The language model's hidden size ``d``, FFN size ``m`` and layer count ``T``.
    k : int
        Layers that see every token (``0 <= k <= layers``).
    r : float
        Fraction of image tokens dropped after layer ``k``, in ``[0, 1]``.
    """
    if not 0 <= k <= layers:
        raise ValueError(f"k must lie in [0, layers={layers}], got {k}")
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"r must lie in [0, 1], got {r}")

    def layer(n):  # FastV sec. 4: projections, attention scores and values, FFN
        return 4 * n * hidden**2 + 2 * n**2 * hidden + 2 * n * hidden * ffn

    n, kept = n_text + n_image, n_text + (1.0 - r) * n_image
    return (k * layer(n) + (layers - k) * layer(kept)) / (layers * layer(n))
