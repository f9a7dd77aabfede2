"""Is the model sure? Token-level entropy, and semantic entropy over sampled answers.

A token distribution's entropy says how spread the next token is; it does not say whether the
peak is right. Semantic entropy (Farquhar et al., Nature 630, 2024) samples several answers,
clusters those that mean the same (bidirectional entailment in the paper), and takes the entropy
of the cluster frequencies: high when the samples disagree in meaning, a sign of confabulation.

Book: chapter "Decoding and sampling", section "A confident wrong answer, in probabilities".
"""
from __future__ import annotations

import numpy as np


def discrete_semantic_entropy(cluster_ids):
    """Entropy (nats) of the share of sampled answers in each meaning cluster.

    The "discrete" estimator of Farquhar et al. (Methods): it needs only the clusters, not the
    answers' probabilities, so it works on an API that returns text alone. 0 when every sample
    means the same; ``log(M)`` when ``M`` samples all differ.

    Parameters
    ----------
    cluster_ids : sequence of hashable, shape (M,)
        One label per sampled answer; equal labels mean equivalent answers.
    """
    ids = list(cluster_ids)
    if not ids:
        raise ValueError("cluster_ids must label at least one sampled answer, got none")
    _, counts = np.unique(np.asarray(ids), return_counts=True)  # (clusters,)
    p = counts / counts.sum()
    return float((p * np.log(1.0 / p)).sum())  # log(1/p) >= 0: exactly 0.0 for one cluster, never -0.0


def token_entropy(logits, temperature=1.0):
    """Entropy (nats) of ``softmax(logits / temperature)`` for each row.

    Parameters
    ----------
    logits : array, shape (..., V)
    temperature : float, > 0
    """
    x = np.asarray(logits, dtype=float)
    if x.ndim == 0 or x.shape[-1] == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"logits must be finite with a non-empty last axis, got shape {x.shape}")
    if not (isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    z = x / temperature
    z = z - z.max(axis=-1, keepdims=True)  # every exponent <= 0
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, -p * np.log(p), 0.0).sum(axis=-1)
