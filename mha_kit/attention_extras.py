"""Three small counts around attention: Swin's window cost, attention rollout, the efficient family.

* :func:`swin_attention_flops`: Liu et al. 2021, sec. 3.2, Eq. (1)-(2): global multi-head
  self-attention over ``h x w`` patches against attention inside ``M x M`` windows;
* :func:`attention_rollout`: Abnar & Zuidema 2020, sec. 3: add the residual as ``0.5 A + 0.5 I``,
  renormalise the rows, multiply the layers;
* :func:`efficient_attention_entries`: the score entries one layer of each efficient-attention
  method computes for ``n`` tokens (full, Linformer, Nystromformer, Performer, Longformer, BigBird,
  Reformer), the number behind each method's complexity.

Book: chapters "Why attention", "Multi-tenant serving" and "Sparse patterns and long-context evaluation".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def swin_attention_flops(h, w, channels, window):
    """``(global, windowed)`` multiply-adds of one self-attention layer over ``h x w`` patches.

    Global: ``4 h w C**2 + 2 (h w)**2 C``; windowed: ``4 h w C**2 + 2 M**2 h w C`` (Swin Eq. 1-2; the
    first term is the four projections, the second the scores and the weighted sum). Raises
    ``ValueError`` unless the window divides both sides.
    """
    h, w, c, m = (check_positive_int(k, v) for k, v in (("h", h), ("w", w), ("channels", channels),
                                                         ("window", window)))
    if h % m or w % m:
        raise ValueError(f"window must divide h and w, got window={m} for h={h}, w={w}")
    hw = h * w
    return 4 * hw * c * c + 2 * hw * hw * c, 4 * hw * c * c + 2 * m * m * hw * c


def attention_rollout(attentions):
    """Attention rollout over layers (Abnar & Zuidema 2020, sec. 3).

    Parameters
    ----------
    attentions : array_like, shape (L, n, n)
        Each layer's attention, averaged over heads; rows sum to 1.

    Returns
    -------
    ndarray, shape (n, n)
        ``R = A'_L ... A'_1`` with ``A' = 0.5 A + 0.5 I`` (rows renormalised): row ``i`` is how much of
        the input token ``j`` reaches position ``i`` at the top, counting the residual path.
    """
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise ValueError(f"attentions must have shape (L, n, n), got {a.shape}")
    eye = np.eye(a.shape[1])
    rollout = eye
    for layer in a:  # bottom layer first
        mixed = 0.5 * layer + 0.5 * eye  # (n, n)
        rollout = (mixed / mixed.sum(axis=1, keepdims=True)) @ rollout
    return rollout


def efficient_attention_entries(n, *, k=256, landmarks=64, features=256, window=512, block=64,
                                bigbird_blocks=8, bucket=64) -> dict:
    """Score entries per head and layer for ``n`` tokens, by method (what each one's cost counts).

    full ``n**2``; Linformer ``n k`` (keys projected to ``k`` rows); Nystromformer ``2 n m + m**2``
    (``m`` landmarks); Performer ``n r`` (``r`` random features, no score matrix: the count is the
    feature maps); Longformer ``n (2 window + 1)``; BigBird ``n * bigbird_blocks * block``; Reformer
    ``n * bucket`` (attention inside sorted chunks of one bucket size).
    """
    n = check_positive_int("n", n)
    for name, v in (("k", k), ("landmarks", landmarks), ("features", features), ("window", window),
                    ("block", block), ("bigbird_blocks", bigbird_blocks), ("bucket", bucket)):
        check_positive_int(name, v)
    return {"full": n * n, "Linformer": n * k, "Nystromformer": 2 * n * landmarks + landmarks ** 2,
            "Performer": n * features, "Longformer": n * (2 * window + 1),
            "BigBird": n * bigbird_blocks * block, "Reformer": n * bucket}
