"""Decoding beyond sampling: MBR selection, contrastive search and the Amdahl bound (fix5a)."""
import numpy as np


def mbr_select(utility):
    """Minimum Bayes risk selection over N sampled candidates (Bertsch et al. 2023, Sec. 2).

    Parameters
    ----------
    utility : array, shape (N, N)
        ``utility[i, j]``: how good candidate i is if candidate j were the reference.

    Returns
    -------
    best : int
        The candidate with the largest mean utility against the others (the diagonal left out).
    expected : array, shape (N,)
    """
    u = np.asarray(utility, dtype=float)
    if u.ndim != 2 or u.shape[0] != u.shape[1] or u.shape[0] < 2:
        raise ValueError(f"utility must be a square (N, N) matrix with N >= 2, got shape {u.shape}")
    n = u.shape[0]
    expected = (u.sum(axis=1) - np.diag(u)) / (n - 1)
    return int(np.argmax(expected)), expected


def contrastive_select(probs, cand_hidden, context_hidden, alpha):
    """Contrastive search's choice among the top-k (Su et al. 2022, Sec. 4.1, Eq. (5)).

    Score ``(1 - alpha) p(v) - alpha max_j cos(h_v, h_j)`` over the context's hidden states.

    Parameters
    ----------
    probs : array, shape (k,)
        Model probabilities of the k candidates.
    cand_hidden : array, shape (k, d)
        Hidden state each candidate would produce.
    context_hidden : array, shape (t, d)
        Hidden states of the tokens so far.
    alpha : float in [0, 1]
        Degeneration penalty; 0 is greedy decoding.
    """
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    c = np.asarray(cand_hidden, dtype=float)
    h = np.asarray(context_hidden, dtype=float)
    cos = (c / np.linalg.norm(c, axis=1, keepdims=True)) @ (h / np.linalg.norm(h, axis=1, keepdims=True)).T  # (k, t)
    score = (1 - alpha) * np.asarray(probs, dtype=float) - alpha * cos.max(axis=1)
    return int(np.argmax(score)), score


def amdahl_speedup(fraction, factor):
    """Whole-task speed-up when a part taking ``fraction`` of the time is made ``factor`` times faster (Amdahl 1967).

    ``1 / ((1 - fraction) + fraction / factor)``; the limit for an infinite factor is ``1 / (1 - fraction)``.
    """
    if not 0 <= fraction <= 1 or factor <= 0:
        raise ValueError(f"need 0 <= fraction <= 1 and factor > 0, got fraction={fraction}, factor={factor}")
    return 1.0 / ((1.0 - fraction) + fraction / factor)


def longnet_attention_flops(n, d, segments, dilations):
    """FLOPs of LongNet's dilated attention, one (w, r) pair per entry (Ding et al. 2023, Sec. 2.4).

    Each pair splits ``n`` tokens into ``n / w`` segments and keeps every r-th token of each:
    ``2 (n / w) (w / r)^2 d`` for the two products. Summed over the pairs.
    """
    if len(segments) != len(dilations):
        raise ValueError(f"one dilation per segment length: got {len(segments)} and {len(dilations)}")
    total = 0.0
    for w, r in zip(segments, dilations):
        if w % r or n % w:
            raise ValueError(f"need r | w and w | n; got n={n}, w={w}, r={r}")
        total += 2 * (n / w) * (w / r) ** 2 * d
    return total


def linear_probe_expected_probes(load):
    """Expected probes of linear probing at load factor ``load`` (Knuth, TAOCP vol. 3, Sec. 6.4).

    Returns ``(hit, miss)``: ``(1 + 1/(1 - a)) / 2`` and ``(1 + 1/(1 - a)^2) / 2``.
    """
    if not 0 <= load < 1:
        raise ValueError(f"load factor must be in [0, 1), got {load}")
    return 0.5 * (1 + 1 / (1 - load)), 0.5 * (1 + 1 / (1 - load) ** 2)
