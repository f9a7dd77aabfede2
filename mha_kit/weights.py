"""Random projection weights and the book's seeded toy example."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import AttentionConfig

#: Seed of the toy example carried through the book (3 tokens, d=4, h=2).
TOY_SEED = 1


@dataclass(frozen=True)
class AttentionWeights:
    """The four projections of one layer; unpacks as ``w_q, w_k, w_v, w_o``."""

    w_q: np.ndarray  # (d, h * d_h)
    w_k: np.ndarray  # (d, h_kv * d_h)
    w_v: np.ndarray  # (d, h_kv * d_h)
    w_o: np.ndarray  # (h * d_h, d)

    def __iter__(self):
        return iter((self.w_q, self.w_k, self.w_v, self.w_o))


def init_weights(cfg: AttentionConfig, seed=0, dtype=np.float64) -> AttentionWeights:
    """Weights with entries ``N(0, 1/fan_in)`` from ``numpy.random.default_rng(seed)``."""
    if not isinstance(cfg, AttentionConfig):
        raise ValueError(f"expected an AttentionConfig, got {type(cfg).__name__}")
    rng = np.random.default_rng(seed)
    d, q_width, kv_width = cfg.d_model, cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim

    def w(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(dtype)

    return AttentionWeights(w(d, q_width), w(d, kv_width), w(d, kv_width), w(q_width, d))


def toy_example(seed=TOY_SEED):
    """The book's running example: 3 tokens, width 4, 2 heads of size 2.

    Returns
    -------
    x : ndarray, shape (3, 4)
        Token vectors, ``N(0, 1)``.
    weights : AttentionWeights
    cfg : AttentionConfig
    """
    cfg = AttentionConfig(d_model=4, num_heads=2, name="toy")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, cfg.d_model))
    return x, init_weights(cfg, seed=seed + 1), cfg
