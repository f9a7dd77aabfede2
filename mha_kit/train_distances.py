"""How often each relative distance is trained: why a model "trained for 2K" may not work at 2K.

Causal attention over a document of ``L`` tokens trains ``L - r`` query-key pairs at distance
``r``. Packed into rows of ``seq_len`` tokens, a document longer than the row is cut into pieces;
with a document mask (Llama 3 sec. 3.2) no pair crosses a document boundary, so distances near
the row length come only from the rare documents that long. An et al. (arXiv:2410.18745 sec. 2)
call the resulting distribution of trained distances left-skewed and trace the short effective
context to it.

Book: chapter "Long-context structure", section "'Trained for 2K', broken past 512".
"""
from __future__ import annotations

import numpy as np

from .config import check_positive_int


def trained_distance_counts(doc_lengths, seq_len, document_mask=True):
    """Query-key pairs at each distance ``r = 0 .. seq_len - 1`` in one epoch of packed rows.

    Parameters
    ----------
    doc_lengths : sequence of int, shape (D,)
        Token count of each document, packed in order into rows of ``seq_len`` tokens (the last row
        may be partial; a document may straddle rows).
    seq_len : int
        The training context ("trained for 2K").
    document_mask : bool
        ``True``: a token attends only within its own document and row (Llama 3); ``False``: to
        everything earlier in the row, other documents included.

    Returns
    -------
    ndarray of int64, shape (seq_len,)
        ``counts[r]``: the pairs ``(i, j)``, ``i - j = r``, that a causal pass over the data trains.
    """
    n = check_positive_int("seq_len", seq_len)
    lengths = [check_positive_int(f"doc_lengths[{i}]", x) for i, x in enumerate(doc_lengths)]
    if not lengths:
        raise ValueError("doc_lengths must name at least one document, got an empty sequence")
    ends = np.cumsum(lengths)  # document boundaries in the packed stream
    cuts = np.arange(n, int(ends[-1]), n)  # row boundaries
    bounds = np.unique(np.concatenate([[0], cuts, ends] if document_mask else [[0], cuts, ends[-1:]]))
    segments = np.diff(bounds)  # (segments,): runs no pair crosses
    r = np.arange(n)  # (seq_len,)
    return np.maximum(segments[:, None] - r[None, :], 0).sum(axis=0).astype(np.int64)  # (seq_len,)
