"""Inexact KV caches: keep some tokens (H2O, SnapKV) or share one cache between layers (CLA, YOCO).

The caches of the rest of the book are exact: every key and value stays, so the output is that
of full attention. The ones here change the output to save memory:

* :func:`h2o_keep`: the most recent tokens plus the "heavy hitters", the tokens with the largest
  attention accumulated over the queries so far (Zhang et al. 2023, sec. 3).
* :func:`snapkv_keep`: the tokens that the last queries of the prompt (an observation window)
  attend to most, pooled so that neighbours come along (Li et al. 2024, sec. 4).
* :func:`cross_layer_cache_bytes` and :func:`yoco_cache_bytes`: cache per token when layers share
  keys and values (CLA, Brandon et al. 2024) or when one global cache serves the upper half of
  the model (YOCO, Sun et al. 2024).

Book: chapter "Tree attention, shared prefixes and inexact caches", section "Inexact caches".
"""
from __future__ import annotations

import numpy as np

from .attention import softmax
from .config import check_positive_int
from .counting import kv_elements_per_token
from .units import elements_to_bytes


def _check_budget(name, value, s):
    value = check_positive_int(name, value) if value else 0
    if value > s:
        raise ValueError(f"{name} ({value}) must be at most the number of keys ({s})")
    return value


def h2o_keep(attn_probs, heavy, recent):
    """Keys H2O keeps: the last ``recent`` ones and the ``heavy`` others with most attention.

    Parameters
    ----------
    attn_probs : ndarray, shape (n, s)
        Attention probabilities of the queries seen so far (rows sum to 1 over allowed keys).
    heavy, recent : int
        Heavy hitters and recent tokens to keep; ``heavy + recent <= s``.

    Returns
    -------
    ndarray of int64, sorted key indices, length ``heavy + recent``
    """
    s = attn_probs.shape[-1]
    heavy, recent = _check_budget("heavy", heavy, s), _check_budget("recent", recent, s)
    if heavy + recent > s:
        raise ValueError(f"heavy + recent ({heavy} + {recent}) must be at most the number of keys ({s})")
    score = attn_probs.sum(axis=0)[: s - recent]  # accumulated attention of the older keys
    top = np.argsort(-score, kind="stable")[:heavy]
    return np.sort(np.concatenate([top, np.arange(s - recent, s)])).astype(np.int64)


def snapkv_keep(q_window, k, budget, kernel=5):
    """Keys SnapKV keeps from a prompt: its observation window plus the ``budget`` most voted.

    The last ``w`` queries of the prompt vote: their softmax weights over the earlier keys are
    summed, smoothed by an average over ``kernel`` neighbours (so a chosen token brings its
    neighbours), and the top ``budget`` earlier keys are kept with the ``w`` window keys.

    Parameters
    ----------
    q_window : ndarray, shape (w, d_h)
        Queries of the last ``w`` prompt tokens.
    k : ndarray, shape (s, d_h)
        Keys of the whole prompt, the window last.
    budget : int
        Earlier keys to keep.
    kernel : int
        Odd pooling width.

    Returns
    -------
    ndarray of int64, sorted key indices, length ``budget + w``
    """
    w, s = q_window.shape[0], k.shape[0]
    if kernel < 1 or kernel % 2 == 0:
        raise ValueError(f"kernel must be a positive odd int, got {kernel}")
    budget = _check_budget("budget", budget, s - w)
    scores = q_window @ k[: s - w].T / np.sqrt(k.shape[1])  # (w, d_h) @ (d_h, s - w) -> (w, s - w)
    votes = softmax(scores, axis=1).sum(axis=0)  # (s - w,)
    pooled = np.convolve(np.pad(votes, kernel // 2, mode="edge"), np.ones(kernel) / kernel, mode="valid")
    top = np.argsort(-pooled, kind="stable")[:budget]
    return np.sort(np.concatenate([top, np.arange(s - w, s)])).astype(np.int64)


def cross_layer_cache_bytes(cfg, sharing_factor, fmt="bf16"):
    """Cache bytes per token when each group of ``sharing_factor`` adjacent layers shares one K, V.

    Cross-Layer Attention (CLA): only one layer in each group computes keys and values; the
    others attend to them. ``ceil(L / factor)`` layers hold a cache.

    Returns
    -------
    int
    """
    f = check_positive_int("sharing_factor", sharing_factor)
    caching_layers = -(-cfg.num_layers // f)
    return elements_to_bytes(caching_layers * kv_elements_per_token(cfg), fmt)


def yoco_cache_bytes(cfg, context_len, window, fmt="bf16"):
    """Cache bytes of one sequence under YOCO's split: windowed lower half, one shared global cache.

    The lower ``L/2`` layers (the self-decoder) use sliding-window attention and keep at most
    ``window`` tokens each; the upper half (the cross-decoder) attends to **one** global cache of
    ``context_len`` tokens, produced once from the self-decoder's output.

    Parameters
    ----------
    cfg : AttentionConfig
        Its ``num_layers`` and per-layer cache shape.
    context_len, window : int

    Returns
    -------
    int
    """
    s, wdw = check_positive_int("context_len", context_len), check_positive_int("window", window)
    per_layer_token = kv_elements_per_token(cfg)
    self_decoder = (cfg.num_layers // 2) * min(s, wdw) * per_layer_token
    return elements_to_bytes(self_decoder + s * per_layer_token, fmt)
