"""Fixed sparse attention patterns, the prefix-LM mask, and windows over a long document.

Every mask follows :func:`mha_kit.causal_mask`'s convention: a boolean ``(n, n)`` array, ``True``
where query ``i`` may attend to key ``j``. What a pattern costs is the number of ``True`` entries,
the scores a kernel that skips the rest computes (:func:`mask_density` against ``n ** 2``).

* :func:`longformer_mask`: a sliding window, optionally dilated, plus global tokens that attend
  to everything and are attended by everything (Longformer, Beltagy et al. 2020, sec. 3.1);
* :func:`bigbird_block_mask`: blocks of tokens; each query block reads its neighbouring blocks,
  the global blocks and a few random blocks (BigBird, Zaheer et al. 2020, sec. 2 and app. D);
* :func:`strided_masks`: the two heads of the Sparse Transformer's strided pattern, a local one
  and one that reads every ``stride``-th earlier token (Child et al. 2019, sec. 4.2-4.3);
* :func:`lsh_buckets`, :func:`lsh_bucket_mask`: Reformer's angular hashing; a query reads the keys
  of its own bucket (Kitaev et al. 2020, sec. 3);
* :func:`shifted_sparse_masks`: LongLoRA's S²-Attn, attention within groups, half of the heads on
  groups shifted by half a group (Chen et al. 2024, sec. 3.2);
* :func:`prefix_lm_mask`: bidirectional over a prefix, causal after it (T5's prefix LM, UniLM,
  GLM);
* :func:`document_windows`: the overlapping windows that cut a document longer than an encoder's
  limit (the ``stride`` of Hugging Face tokenizers);
* :func:`nsa_decode_tokens`, :func:`moba_decode_tokens`, :func:`dsa_decode_tokens`: what one decode
  step of learned sparse attention reads, by blocks (NSA, MoBA) or by tokens (DSA).

Book: chapter "Sparse patterns and long-context evaluation".
"""
from __future__ import annotations

import numpy as np

from .attention import causal_mask, sliding_window_mask
from .config import check_positive_int


def _positions(n):
    idx = np.arange(check_positive_int("n", n))
    return idx[:, None], idx[None, :]  # query i down the rows, key j across the columns


def mask_density(mask) -> float:
    """The share of the ``n x s`` scores a mask keeps: ``mask.sum() / mask.size``.

    A kernel that skips masked blocks computes ``mask.sum()`` scores instead of ``n * s``.
    """
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.ndim != 2:
        raise ValueError(f"expected a 2-D boolean mask, got dtype {mask.dtype} and shape {mask.shape}")
    return float(mask.sum()) / mask.size


def longformer_mask(n, window, global_tokens=(), dilation=1):
    """Longformer's pattern: a (dilated) sliding window plus symmetric global attention.

    Query ``i`` reads keys ``j`` with ``|i - j| <= window // 2`` and ``(i - j) % dilation == 0``
    ("a fixed-size window ... ``w/2`` tokens on each side", with gaps of ``dilation - 1`` between
    the keys it reads); a global token reads every key and every query reads it (sec. 3.1).
    Bidirectional, as in an encoder.

    Parameters
    ----------
    n : int
    window : int
        ``w``, the width of the window (``w // 2`` keys on each side).
    global_tokens : sequence of int
        Positions with global attention (``[CLS]``, the question tokens in QA).
    dilation : int
        ``d``; 1 is the plain sliding window.

    Returns
    -------
    ndarray of bool, shape (n, n)
    """
    i, j = _positions(n)
    half = check_positive_int("window", window) // 2
    d = check_positive_int("dilation", dilation)
    mask = (j >= i - half * d) & (j <= i + half * d)  # |i - j| <= half * d, without (n, n) integers
    if d > 1:
        mask &= i % d == j % d  # (i - j) % d == 0, without an (n, n) modulo
    g = np.asarray(global_tokens, dtype=int).reshape(-1)
    if g.size and (g.min() < 0 or g.max() >= n):
        raise ValueError(f"global_tokens must be positions in 0 .. {n - 1}, got {g.tolist()}")
    mask[g, :] = True  # a global token reads everything
    mask[:, g] = True  # and everything reads it
    return mask


def bigbird_block_mask(num_blocks, block_size, num_random_blocks=3, window_blocks=3, seed=0):
    """BigBird's block-sparse pattern (ITC): window, global and random blocks, as a token mask.

    The sequence is ``num_blocks`` blocks of ``block_size`` tokens. The first and last blocks are
    global (they read every block and every block reads them); every other query block reads the
    ``window_blocks`` blocks centred on it and ``num_random_blocks`` other blocks drawn at random
    (sec. 2; app. D blockifies the pattern; Hugging Face's ``BigBirdConfig`` defaults are a block
    of 64 tokens and 3 random blocks).

    Returns
    -------
    ndarray of bool, shape (num_blocks * block_size, num_blocks * block_size)
    """
    nb, b = check_positive_int("num_blocks", num_blocks), check_positive_int("block_size", block_size)
    r, w = int(num_random_blocks), check_positive_int("window_blocks", window_blocks)
    if r < 0 or nb < 2 + w + r:
        raise ValueError(f"num_blocks ({nb}) must leave room for 2 global, {w} window and {r} random blocks")
    qb, kb = _positions(nb)
    blocks = np.abs(qb - kb) <= w // 2  # (nb, nb) the window
    blocks[[0, -1], :] = blocks[:, [0, -1]] = True  # global blocks
    rng = np.random.default_rng(seed)
    for q in range(1, nb - 1):
        free = np.flatnonzero(~blocks[q])  # blocks not already read
        blocks[q, rng.choice(free, size=min(r, free.size), replace=False)] = True
    return np.kron(blocks, np.ones((b, b), dtype=bool)).astype(bool)  # (nb, nb) -> (nb * b, nb * b)


def strided_masks(n, stride):
    """The Sparse Transformer's strided pattern: two causal heads whose union covers the past.

    Head 1 reads the last ``stride`` positions, ``i - stride < j <= i``; head 2 reads every
    ``stride``-th position back, ``(i - j) % stride == 0`` (sec. 4.3, fig. 3, with ``stride`` near
    ``sqrt(n)``). Two steps, one through each head, connect any two positions.

    Returns
    -------
    local, strided : ndarray of bool, shape (n, n) each
    """
    i, j = _positions(n)
    step = check_positive_int("stride", stride)
    return sliding_window_mask(n, step), (j <= i) & (i % step == j % step)  # (i - j) % step == 0, without an (n, n) modulo


def lsh_buckets(x, num_buckets, seed=0):
    """Reformer's angular LSH: ``h(x) = argmax([xR; -xR])`` with a random ``R`` of ``num_buckets / 2`` columns.

    Vectors at a small angle land in the same bucket with high probability (sec. 3).

    Parameters
    ----------
    x : ndarray, shape (n, d_h)
        The shared query-key vectors (Reformer ties queries and keys).
    num_buckets : int
        Even.

    Returns
    -------
    ndarray of int, shape (n,)
    """
    x = np.asarray(x, dtype=float)
    nbk = check_positive_int("num_buckets", num_buckets)
    if nbk % 2 or x.ndim != 2:
        raise ValueError(f"num_buckets must be even and x of shape (n, d_h); got {nbk} and {x.shape}")
    rotation = np.random.default_rng(seed).normal(size=(x.shape[1], nbk // 2))  # (d_h, b/2)
    projected = x @ rotation  # (n, d_h) @ (d_h, b/2) -> (n, b/2)
    return np.argmax(np.concatenate([projected, -projected], axis=1), axis=1)


def lsh_bucket_mask(buckets, causal=True):
    """Query ``i`` reads key ``j`` when they share a bucket (and ``j <= i`` when ``causal``).

    Reformer then sorts by bucket and attends within fixed-size chunks; this mask is the ideal it
    approximates, one hashing round.
    """
    buckets = np.asarray(buckets).reshape(-1)
    same = buckets[:, None] == buckets[None, :]  # (n, n)
    return same & causal_mask(buckets.size) if causal else same


def shifted_sparse_masks(n, group_size):
    """LongLoRA's S²-Attn: causal attention within groups; half of the heads use groups shifted by half.

    Pattern 1 cuts the ``n`` tokens into groups of ``group_size``. Pattern 2 rolls the tokens by
    ``group_size // 2`` before grouping, so its groups straddle pattern 1's boundaries and
    information flows between neighbouring groups (sec. 3.2, fig. 2); the roll wraps, so the last
    half-group and the first share a group. Used to fine-tune; the model then runs with full
    attention.

    Returns
    -------
    plain, shifted : ndarray of bool, shape (n, n) each
    """
    i, j = _positions(n)
    g = check_positive_int("group_size", group_size)
    if n % g or g % 2:
        raise ValueError(f"n ({n}) must be a multiple of group_size ({g}), and group_size even")
    rolled_i, rolled_j = (i - g // 2) % n, (j - g // 2) % n  # position after rolling by g/2
    plain = (i // g == j // g) & (j <= i)
    shifted = (rolled_i // g == rolled_j // g) & (rolled_j <= rolled_i)  # causal in the rolled order
    return plain, shifted


def prefix_lm_mask(n, prefix_len):
    """Prefix-LM mask: every token reads the whole prefix; after it, attention is causal.

    ``True`` where ``j < prefix_len`` or ``j <= i``. ``prefix_len = 0`` (or 1) is the causal mask;
    ``prefix_len = n`` is full bidirectional attention (T5's prefix LM, Raffel et al. 2020,
    sec. 3.2.1, fig. 3; UniLM's sequence-to-sequence mask; GLM's Part A).

    Returns
    -------
    ndarray of bool, shape (n, n)
    """
    i, j = _positions(n)
    if isinstance(prefix_len, bool) or not isinstance(prefix_len, (int, np.integer)) or not 0 <= prefix_len <= n:
        raise ValueError(f"prefix_len must be an integer in 0 .. n ({n}), got {prefix_len!r}")
    return (j < prefix_len) | causal_mask(n)


def document_windows(num_tokens, max_len, stride):
    """The windows that cover a document of ``num_tokens`` with ``max_len`` tokens each.

    Consecutive windows overlap by ``stride`` tokens, so each starts ``max_len - stride`` after
    the previous one and the last one ends at the document's end (Hugging Face tokenizers'
    ``return_overflowing_tokens`` with ``stride``). ``max_len`` counts content tokens: for BERT
    it is 512 less the special tokens and the question.

    Returns
    -------
    list of (start, end)
        Half-open token ranges.
    """
    total, size = check_positive_int("num_tokens", num_tokens), check_positive_int("max_len", max_len)
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or not 0 <= stride < size:
        raise ValueError(f"stride must be an integer in 0 .. max_len - 1 ({size - 1}), got {stride!r}")
    step = size - stride
    count = 1 + -(-max(total - size, 0) // step)  # ceil: each window after the first adds step tokens
    return [(k * step, min(k * step + size, total)) for k in range(count)]


def nsa_decode_tokens(context_len, cmp_stride=16, sel_block=64, num_selected=16, window=512) -> int:
    """Tokens one NSA query reads per KV-head group at decode: compressed, selected and windowed.

    The compressed branch attends to one summary token every ``cmp_stride`` tokens
    (``context_len // cmp_stride``); the selected branch to ``num_selected`` blocks of
    ``sel_block`` tokens; the sliding branch to the last ``window`` tokens, each capped at the
    context. The count is shared by all query heads of a GQA group, which select the same blocks.
    Defaults are NSA's (Yuan et al. 2025, sec. 4.1: l = 32, d = 16, l' = 64, n = 16, w = 512);
    with them the count is the paper's Table 4 (2,048 tokens at 8K, 5,632 at 64K).

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    s, d, block, n, w = (check_positive_int(k, v) for k, v in (
        ("context_len", context_len), ("cmp_stride", cmp_stride), ("sel_block", sel_block),
        ("num_selected", num_selected), ("window", window)))
    return s // d + min(n * block, s) + min(w, s)


def moba_decode_tokens(context_len, block=4096, top_k=12) -> tuple[int, int]:
    """MoBA's reads for one query head at decode: ``(block_keys, attended_tokens)``.

    The gate scores the query against one mean-pooled key per block of ``block`` tokens
    (``ceil(context_len / block)`` of them) and attends to the ``top_k`` best blocks, the query's
    own block always among them (Lu et al. 2025, sec. 2.2-2.3; MoonshotAI/MoBA
    ``moba_attn_varlen``). Each query head selects its own blocks. Defaults are the 1M-token
    setting of the paper (block 4,096, top-k 12).

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    s, b, k = (check_positive_int(n, v) for n, v in (("context_len", context_len), ("block", block),
                                                      ("top_k", top_k)))
    num_blocks = -(-s // b)  # ceil: the last block may be partial
    return num_blocks, min(k * b, s)


def dsa_decode_tokens(context_len, top_k=2048) -> tuple[int, int]:
    """DSA's reads for one query at decode: ``(indexer_keys, attended_entries)``.

    The lightning indexer scores every preceding token with its own small key, and the core
    attention reads the ``top_k`` entries with the highest scores (DeepSeek-V3.2-Exp report,
    sec. 2.1; ``index_topk`` 2,048). In MLA's MQA mode one latent entry serves every query head.

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    s, k = check_positive_int("context_len", context_len), check_positive_int("top_k", top_k)
    return s, min(k, s)


def dsa_query_macs(context_len, attention_macs_per_key, index_heads=64, index_head_dim=128,
                   top_k=2048) -> dict:
    """Multiply-adds of one query at position ``context_len``: DSA against dense attention.

    The lightning indexer scores every preceding token: each of its ``index_heads`` heads takes a
    dot product of ``index_head_dim`` with the token's one shared key, and the head's weight
    multiplies its ReLU score, ``index_heads * (index_head_dim + 1)`` per token
    (DeepSeek-V3.2-Exp ``inference/model.py``, ``Indexer.forward``). The core attention then costs
    ``attention_macs_per_key`` for each of the ``min(top_k, context_len)`` selected entries;
    dense attention costs it for every entry. The indexer's own projections are left out.

    Parameters
    ----------
    context_len : int
        Tokens the query may see (its position, counting itself).
    attention_macs_per_key : int
        Multiply-adds per (query, key) pair of the core attention, scores and values, all heads.
    index_heads, index_head_dim, top_k : int
        DeepSeek-V3.2-Exp's ``index_n_heads`` 64, ``index_head_dim`` 128, ``index_topk`` 2048.

    Returns
    -------
    dict of int
        ``{"indexer", "attention", "dsa", "dense"}``, with ``dsa = indexer + attention``.

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    s, selected = dsa_decode_tokens(context_len, top_k)  # every preceding token, and the top-k of them
    per_key = check_positive_int("attention_macs_per_key", attention_macs_per_key)
    h, d = check_positive_int("index_heads", index_heads), check_positive_int("index_head_dim", index_head_dim)
    indexer, attention = s * h * (d + 1), per_key * selected
    return {"indexer": indexer, "attention": attention, "dsa": indexer + attention, "dense": per_key * s}
