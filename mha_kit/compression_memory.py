"""Pruning scores, training activation memory and embedding-index bytes (interview round 10a).

* :func:`wanda_mask`: Wanda's one-shot pruning rule, score ``|W_ij| * ||X_j||_2`` compared within
  each output row (Sun et al. 2023, §3; ``lib/prune.py`` of locuslab/wanda).
* :func:`block_influence`: ShortGPT's layer-redundancy score, one minus the mean cosine similarity
  between a layer's input and output hidden states (Men et al. 2024, §3).
* :func:`activation_bytes_per_layer`: the activations one GPT-style layer keeps for the backward
  pass in 16-bit training (Korthikanti et al. 2022, §4).
* :func:`embedding_index_bytes`: the bytes of a vector index at float32, int8 or binary precision
  (sentence-transformers ``quantize_embeddings``).

Book: chapters "Weight quantization for serving" and "The KV cache from zero".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def wanda_mask(weight, act_norm, sparsity):
    """Keep-mask of Wanda pruning: drop, in each output row, the weights of lowest ``|W| * ||X||``.

    weight: (d_out, d_in); act_norm: (d_in,) the L2 norm of each input feature over the
    calibration tokens; sparsity: the fraction of each row to remove, in [0, 1).
    Returns a boolean (d_out, d_in) array, True where the weight is kept. With ``act_norm`` all
    ones this is per-row magnitude pruning.
    """
    weight = np.asarray(weight, dtype=np.float64)
    act_norm = np.asarray(act_norm, dtype=np.float64)
    if weight.ndim != 2 or act_norm.shape != (weight.shape[1],):
        raise ValueError(f"weight must be (d_out, d_in) and act_norm (d_in,); got {weight.shape} and {act_norm.shape}")
    if not 0 <= sparsity < 1:
        raise ValueError(f"sparsity must lie in [0, 1); got {sparsity}")
    score = np.abs(weight) * act_norm[None, :]  # (d_out, d_in)
    n_drop = int(weight.shape[1] * sparsity)
    order = np.argsort(score, axis=1, kind="stable")[:, :n_drop]  # (d_out, n_drop) lowest scores
    mask = np.ones(weight.shape, dtype=bool)
    np.put_along_axis(mask, order, False, axis=1)
    return mask


def block_influence(x_in, x_out):
    """ShortGPT's Block Influence: 1 - mean over tokens of cos(x_in[t], x_out[t]).

    x_in, x_out: (tokens, d) hidden states entering and leaving one layer. Near 0: the layer
    barely turns its input (a candidate to remove); larger: the layer changes the representation.
    """
    x_in, x_out = np.asarray(x_in, dtype=np.float64), np.asarray(x_out, dtype=np.float64)
    if x_in.shape != x_out.shape or x_in.ndim != 2:
        raise ValueError(f"x_in and x_out must both be (tokens, d); got {x_in.shape} and {x_out.shape}")
    cos = np.sum(x_in * x_out, axis=1) / (np.linalg.norm(x_in, axis=1) * np.linalg.norm(x_out, axis=1))
    return float(1.0 - cos.mean())


def activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, recompute="none"):
    """Bytes one GPT-style layer keeps for backward in 16-bit training (Korthikanti et al. §4).

    ``"none"``: s*b*h*(34 + 5*a*s/h), the 5*a*s/h term being the a*s*s attention scores, softmax
    and dropout mask; ``"selective"``: 34*s*b*h (the score-sized tensors recomputed, as
    FlashAttention also avoids storing them); ``"full"``: 2*s*b*h (only the layer's input kept).
    No tensor or sequence parallelism (divide by t for t-way tensor plus sequence parallelism).
    """
    for name, v in (("seq_len", seq_len), ("micro_batch", micro_batch), ("hidden", hidden), ("heads", heads)):
        check_positive_int(name, v)
    sbh = seq_len * micro_batch * hidden
    if recompute == "none":
        return sbh * 34 + 5 * heads * seq_len * seq_len * micro_batch
    if recompute == "selective":
        return 34 * sbh
    if recompute == "full":
        return 2 * sbh
    raise ValueError(f"recompute must be 'none', 'selective' or 'full'; got {recompute!r}")


EMBEDDING_BITS = {"float32": 32, "int8": 8, "binary": 1}


def embedding_index_bytes(n_vectors, dim, precision):
    """Bytes of ``n_vectors`` embeddings of ``dim`` dimensions at float32, int8 or binary.

    Binary packs one sign bit per dimension into bytes (``np.packbits``), so ``dim`` must be a
    multiple of 8 there.
    """
    check_positive_int("n_vectors", n_vectors)
    check_positive_int("dim", dim)
    if precision not in EMBEDDING_BITS:
        raise ValueError(f"precision must be one of {sorted(EMBEDDING_BITS)}; got {precision!r}")
    if precision == "binary" and dim % 8:
        raise ValueError(f"binary packing needs dim divisible by 8; got dim={dim}")
    return n_vectors * dim * EMBEDDING_BITS[precision] // 8
