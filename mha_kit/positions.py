"""Where positions come from: sinusoidal encodings, rotary embedding (RoPE), rotary attention.

Attention itself has no notion of order: permute the tokens and the outputs permute the same
way. Positions enter in one of two places:

* **added to the input** (Vaswani et al. 2017, sec. 3.5): ``x + PE`` before the first layer,
  with :func:`sinusoidal_positions`;
* **rotating queries and keys** in every layer (Su et al. 2021): :func:`rope`, so a score
  depends on the two positions only through their difference ``m - n``;
* **biasing the scores** by distance (ALiBi, Press et al. 2022): :func:`alibi_bias`.

Variants of RoPE: :func:`xpos` (a per-pair decay, Sun et al. 2023), :func:`partial_rope` and
:func:`p_rope_inv_freq` (only part of each head rotated), with :data:`PARTIAL_ROPE` for released
configurations.

Book: chapter "Where positions come from"; ALiBi and scaled frequencies in "Stretching RoPE"; xPos in
"Position encodings, the whole family".
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .attention import grouped_attention
from .config import check_positive_int


def _rope_positions(positions, n, name="positions"):
    """``positions`` as an integer array of shape ``(n,)``, or a ``ValueError``."""
    positions = np.asarray(positions)
    if positions.shape != (n,):
        raise ValueError(f"expected {name} of shape ({n},), got {positions.shape}")
    if positions.size and not np.issubdtype(positions.dtype, np.integer):
        raise ValueError(f"{name} must be integers (token indices), got dtype {positions.dtype}")
    return positions


def _check_base(base):
    """``base`` as a float, or a ``ValueError``: the angles are ``position * base**(-2i/r)``."""
    if isinstance(base, bool) or not isinstance(base, (int, float, np.integer, np.floating)) \
            or not np.isfinite(base) or base <= 0:
        raise ValueError(f"base must be a positive finite number, got {base!r}")
    return float(base)


def sinusoidal_positions(num_positions, d_model, base=10000.0):
    """Fixed sinusoidal position encodings of Vaswani et al. (arXiv:1706.03762, sec. 3.5).

    ``PE[p, 2i] = sin(p / base**(2i / d))`` and ``PE[p, 2i + 1] = cos(p / base**(2i / d))``:
    each pair of columns is a sine and a cosine of one frequency, the wavelengths growing
    geometrically from ``2 pi`` to ``base * 2 pi``. They are added to the token vectors.

    Parameters
    ----------
    num_positions : int
        ``n``, positions ``0 .. n - 1``.
    d_model : int
        ``d``, even.
    base : float

    Returns
    -------
    ndarray, shape (n, d)

    Book: chapter "Where positions come from".
    """
    n = check_positive_int("num_positions", num_positions)
    d = check_positive_int("d_model", d_model)
    if d % 2:
        raise ValueError(f"d_model ({d}) must be even: sinusoidal encodings come in sine-cosine pairs")
    angle = np.arange(n)[:, None] * _check_base(base) ** (-np.arange(0, d, 2) / d)  # (n, d/2): p * omega_i
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)  # interleaved: sin, cos, sin, cos ...
    return pe


def _inv_freq(r, base, inv_freq):
    """The frequencies of the ``r/2`` pairs: ``base**(-2i/r)``, or a given ``inv_freq`` checked."""
    if inv_freq is None:
        return _check_base(base) ** (-np.arange(r // 2) * 2.0 / r)
    inv_freq = np.asarray(inv_freq, dtype=float)
    if inv_freq.shape != (r // 2,) or not np.isfinite(inv_freq).all() or (inv_freq < 0).any():
        raise ValueError(f"expected inv_freq of shape ({r // 2},) = (r/2,) with finite non-negative "
                         f"frequencies, got shape {inv_freq.shape}")
    return inv_freq


def rope(x, positions, base=10000.0, inv_freq=None, attention_factor=1.0):
    """Rotary position embedding (Su et al. 2021, arXiv:2104.09864), half-split layout.

    Dimension ``i`` of the first half and dimension ``i`` of the second half form a pair that
    is rotated by ``position * base**(-2i / r)``. Dot products of two rotated vectors then
    depend only on the difference of their positions. (RoFormer pairs neighbouring dimensions
    ``2i, 2i + 1``; the half split is the same rotation with the dimensions reordered, and a
    reordering applied to both queries and keys leaves every dot product unchanged.)

    Parameters
    ----------
    x : ndarray, shape (..., n, r), ``r`` even
    positions : array_like of int, shape (n,)
    base : float
        Ignored when ``inv_freq`` is given.
    inv_freq : array_like, shape (r/2,), optional
        The pairs' frequencies, e.g. scaled ones from :func:`mha_kit.rope_inv_freq`.
    attention_factor : float
        Multiplies the rotated vector (cos and sin), as transformers does with YaRN's factor.

    Returns
    -------
    ndarray, shape (..., n, r)

    Book: chapter "Where positions come from"; MLA in "Trade-offs"; scaled in "Stretching RoPE".
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"rope expects x of shape (..., n, r), got {x.shape}")
    r = x.shape[-1]
    if r % 2:
        raise ValueError(f"rope needs an even last dimension, got {r}")
    positions = _rope_positions(positions, x.shape[-2])
    angle = positions[:, None] * _inv_freq(r, base, inv_freq)  # (n, 1) * (r/2,) -> (n, r/2)
    cos, sin = attention_factor * np.cos(angle), attention_factor * np.sin(angle)
    x1, x2 = x[..., : r // 2], x[..., r // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def rope_scores(q, k, q_positions, k_positions, base=10000.0, inv_freq=None, attention_factor=1.0):
    """Dot products of one query vector and one key vector placed at every pair of positions.

    ``scores[a, b] = rope(q at q_positions[a]) . rope(k at k_positions[b])``. RoPE's relative
    property says this depends only on ``q_positions[a] - k_positions[b]``.

    Parameters
    ----------
    q, k : ndarray, shape (r,)
    q_positions : array_like of int, shape (m,)
    k_positions : array_like of int, shape (p,)
    base, inv_freq, attention_factor
        As for :func:`rope`.

    Returns
    -------
    ndarray, shape (m, p)

    Book: chapter "Where positions come from"; scaled frequencies in "Stretching RoPE".
    """
    q, k = np.asarray(q), np.asarray(k)
    if q.ndim != 1 or q.shape != k.shape:
        raise ValueError(f"expected q and k of the same shape (r,), got {q.shape} and {k.shape}")
    m, p = np.asarray(q_positions), np.asarray(k_positions)
    turn = dict(base=base, inv_freq=inv_freq, attention_factor=attention_factor)
    rq = rope(np.broadcast_to(q, (m.size, q.size)), m.ravel(), **turn)  # (m, r)
    rk = rope(np.broadcast_to(k, (p.size, k.size)), p.ravel(), **turn)  # (p, r)
    return rq @ rk.T  # (m, r) @ (r, p) -> (m, p)


def rotary_attention(q, k, v, q_positions, k_positions=None, mask=None, base=10000.0, inv_freq=None):
    """Grouped-query attention with RoPE: queries and keys rotated by their positions, values not.

    Parameters
    ----------
    q : ndarray, shape (..., h, n, d_h)
    k : ndarray, shape (..., h_kv, s, d_h)
    v : ndarray, shape (..., h_kv, s, d_v)
    q_positions : array_like of int, shape (n,)
    k_positions : array_like of int, shape (s,), optional
        Defaults to ``q_positions`` (self-attention over the same tokens).
    mask : ndarray of bool, broadcastable to (..., n, s), optional
    base, inv_freq
        As for :func:`rope`.

    Returns
    -------
    out : ndarray, shape (..., h, n, d_v)
    weights : ndarray, shape (..., h, n, s)

    Book: chapter "Where positions come from".
    """
    q, k = np.asarray(q), np.asarray(k)
    if q.ndim < 3 or k.ndim < 3:
        raise ValueError(f"expected q (..., h, n, d_h) and k (..., h_kv, s, d_h), got {q.shape} and {k.shape}")
    k_positions = q_positions if k_positions is None else k_positions
    q_rot = rope(q, _rope_positions(q_positions, q.shape[-2], "q_positions"), base, inv_freq)
    k_rot = rope(k, _rope_positions(k_positions, k.shape[-2], "k_positions"), base, inv_freq)
    return grouped_attention(q_rot, k_rot, v, mask)  # values carry content: they are not rotated


# --- ALiBi: a distance penalty on the scores (no rotation, no added vector) --------------------


def alibi_slopes(num_heads):
    """Per-head slopes ``m_h`` of ALiBi (Press et al. 2022, arXiv:2108.12409, sec. 3).

    For ``h`` a power of two the slopes are the geometric sequence ``2**(-8/h), 2**(-16/h), ...,
    2**(-8)`` (8 heads: ``1/2, 1/4, ..., 1/256``). Otherwise the authors' code takes the
    ``p`` slopes of the largest power of two ``p < h`` and adds ``h - p`` slopes from the
    ``2p``-head sequence, every other one starting with its first: 12 heads get
    ``2**-1 .. 2**-8`` and then ``2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5``.

    Returns
    -------
    ndarray of float64, shape (h,)

    Book: chapter "Stretching RoPE".
    """
    h = check_positive_int("num_heads", num_heads)
    p = 1 << (h.bit_length() - 1)  # largest power of two <= h
    slopes = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    extra = 2.0 ** (-8.0 * np.arange(1, 2 * (h - p), 2) / (2 * p))  # odd steps of the 2p-head sequence
    return np.concatenate([slopes, extra])


def alibi_bias(num_heads, n, s=None):
    """ALiBi's additive bias ``-m_h * (i - j)`` for query position ``i`` and key position ``j``.

    The queries are the last ``n`` of ``s`` positions, as in :func:`mha_kit.causal_mask`. The
    bias is added to the scores before the softmax and is meant to be used with a causal mask:
    entries where the key comes after the query are positive and must be masked.

    Parameters
    ----------
    num_heads : int
    n : int
        Queries.
    s : int, optional
        Keys (default ``n``).

    Returns
    -------
    ndarray of float64, shape (h, n, s)

    Book: chapter "Stretching RoPE".
    """
    n = check_positive_int("n", n)
    s = n if s is None else check_positive_int("s", s)
    if s < n:
        raise ValueError(f"s ({s}) must be at least n ({n}): the queries are the last positions")
    key_minus_query = np.arange(s)[None, :] - (np.arange(n)[:, None] + (s - n))  # (n, s): j - i, <= 0 when visible
    return alibi_slopes(num_heads)[:, None, None] * key_minus_query  # (h, 1, 1) * (n, s) -> (h, n, s)


# --- RoPE variants: xPos's decay, partial rotation (GPT-NeoX, GPT-J, Phi, MLA, p-RoPE) ---------


def _check_fraction(name, value):
    """``value`` as a float in (0, 1], or a ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0 < value <= 1:
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


def xpos_zeta(head_dim, gamma=0.4):
    """Per-pair decay rates of xPos (Sun et al. 2023, arXiv:2212.10554; torchscale ``XPOS``).

    ``zeta_i = (2i / r + gamma) / (1 + gamma)`` for pair ``i`` of ``r / 2``: the fastest pair
    (``i = 0``) gets the smallest rate, ``gamma / (1 + gamma)``, and the slowest a rate near 1.
    torchscale writes it as ``(arange(0, r, 2) + 0.4 r) / (1.4 r)``.

    Returns
    -------
    ndarray, shape (r/2,)

    Book: chapter "Position encodings, the whole family" (xPos).
    """
    r = check_positive_int("head_dim", head_dim)
    if r % 2:
        raise ValueError(f"head_dim ({r}) must be even: xPos decays RoPE's pairs")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not gamma > 0:
        raise ValueError(f"gamma must be a positive number, got {gamma!r}")
    return (np.arange(0, r, 2) / r + gamma) / (1.0 + gamma)


def xpos(x, positions, downscale=False, base=10000.0, scale_base=512.0, gamma=0.4):
    """RoPE times an exponential per pair: ``zeta_i ** (p / scale_base)`` (``** -`` for keys).

    Queries are scaled up and keys down (``downscale=True``), so the score of a query at ``m``
    and a key at ``n`` carries ``zeta_i ** ((m - n) / scale_base)`` on pair ``i``: a decay with
    distance, strongest on the fast pairs, still a function of ``m - n`` only. torchscale centres
    the positions before the power to avoid overflow in low precision; the centre cancels in the
    score, and float64 needs no centring for positions up to a few hundred thousand.

    Parameters
    ----------
    x : ndarray, shape (..., n, r)
    positions : array_like of int, shape (n,)
    downscale : bool
        ``True`` for keys.
    base, scale_base, gamma : float
        RoPE's base; xPos's ``scale_base`` (512 in torchscale) and ``gamma`` (0.4).

    Returns
    -------
    ndarray, shape (..., n, r)

    Book: chapter "Position encodings, the whole family" (xPos).
    """
    rotated = rope(x, positions, base)  # (..., n, r), half-split pairs (i, i + r/2)
    if isinstance(scale_base, bool) or not isinstance(scale_base, (int, float)) or not scale_base > 0:
        raise ValueError(f"scale_base must be a positive number, got {scale_base!r}")
    sign = -1.0 if downscale else 1.0
    power = sign * np.asarray(positions, dtype=float)[:, None] / scale_base  # (n, 1)
    scale = xpos_zeta(x.shape[-1], gamma) ** power  # (r/2,) ** (n, 1) -> (n, r/2)
    return rotated * np.concatenate([scale, scale], axis=-1)  # both halves of each pair


def xpos_scores(q, k, q_positions, k_positions, base=10000.0, scale_base=512.0, gamma=0.4):
    """Scores of one query and one key under xPos at every pair of positions, as :func:`rope_scores`.

    Returns
    -------
    ndarray, shape (m, p)

    Book: chapter "Position encodings, the whole family" (xPos).
    """
    q, k = np.asarray(q), np.asarray(k)
    if q.ndim != 1 or q.shape != k.shape:
        raise ValueError(f"expected q and k of the same shape (r,), got {q.shape} and {k.shape}")
    m, p = np.asarray(q_positions).ravel(), np.asarray(k_positions).ravel()
    turn = dict(base=base, scale_base=scale_base, gamma=gamma)
    rq = xpos(np.broadcast_to(q, (m.size, q.size)), m, **turn)  # (m, r)
    rk = xpos(np.broadcast_to(k, (p.size, k.size)), p, downscale=True, **turn)  # (p, r)
    return rq @ rk.T  # (m, r) @ (r, p) -> (m, p)


def partial_rotary_dims(head_dim, partial_rotary_factor):
    """Dimensions of a head that RoPE rotates: ``int(head_dim * factor)``, the transformers rule.

    GPT-NeoX's ``rotary_pct`` and Phi's ``partial_rotary_factor`` are this factor; GPT-J's
    config gives the count (``rotary_dim``) directly.

    Book: chapter "Where positions come from" (partial RoPE).
    """
    d_h = check_positive_int("head_dim", head_dim)
    rotated = int(d_h * _check_fraction("partial_rotary_factor", partial_rotary_factor))
    if rotated < 2 or rotated % 2:
        raise ValueError(f"int(head_dim * partial_rotary_factor) = int({d_h} * {partial_rotary_factor}) = "
                         f"{rotated} must be even and at least 2: RoPE rotates pairs")
    return rotated


def partial_rope(x, positions, rotary_dims, base=10000.0):
    """Rotate the first ``rotary_dims`` dimensions of each head and pass the rest through.

    The layout of GPT-NeoX and transformers: the rotated slice has its own frequency ladder
    ``base**(-2i / rotary_dims)``, from one radian per token down to about ``1 / base``.

    Parameters
    ----------
    x : ndarray, shape (..., n, d_h)
    positions : array_like of int, shape (n,)
    rotary_dims : int
        Even, at most ``d_h``.

    Returns
    -------
    ndarray, shape (..., n, d_h)

    Book: chapter "Where positions come from" (partial RoPE).
    """
    x = np.asarray(x)
    r = check_positive_int("rotary_dims", rotary_dims)
    if x.ndim < 2 or r % 2 or r > x.shape[-1]:
        raise ValueError(f"rotary_dims ({r}) must be even and at most the head size of x {x.shape}")
    return np.concatenate([rope(x[..., :r], positions, base), x[..., r:]], axis=-1)


def p_rope_inv_freq(head_dim, fraction, base=10000.0):
    """Frequencies of p-RoPE (Barbero et al. 2025): keep the fastest pairs, zero the slowest.

    The first ``int(fraction * r / 2)`` pairs keep RoPE's frequencies ``base**(-2i / r)``; the
    rest get frequency 0, so they are never rotated and carry no position. Pass the result to
    :func:`rope` as ``inv_freq``.

    Returns
    -------
    ndarray, shape (r/2,)

    Book: chapter "Where positions come from" (partial RoPE).
    """
    r = check_positive_int("head_dim", head_dim)
    if r % 2:
        raise ValueError(f"head_dim ({r}) must be even: RoPE rotates pairs")
    kept = int(_check_fraction("fraction", fraction) * r // 2)
    inv_freq = _inv_freq(r, base, None)  # (r/2,) fastest first
    inv_freq[kept:] = 0.0  # the lowest frequencies become position-free channels
    return inv_freq


@dataclass(frozen=True)
class PartialRope:
    """How many of a head's dimensions one released model rotates.

    Book: chapter "Where positions come from" (partial RoPE).
    """

    name: str  # key of PARTIAL_ROPE
    title: str  # "GPT-NeoX-20B"
    head_dim: int  # d_h of a query-key head (hidden_size / num_heads)
    rotary_dims: int  # dimensions RoPE rotates
    cite: str  # references.bib key(s)
    source: str  # the config fields read

    def __post_init__(self):
        d_h, r = check_positive_int("head_dim", self.head_dim), check_positive_int("rotary_dims", self.rotary_dims)
        if r % 2 or r > d_h:
            raise ValueError(f"{self.name}: rotary_dims ({r}) must be even and at most head_dim ({d_h})")

    @property
    def fraction(self) -> float:
        """Share of the head that is rotated."""
        return self.rotary_dims / self.head_dim


_PARTIAL = (
    PartialRope("gpt-neox-20b", "GPT-NeoX-20B", 6144 // 64, partial_rotary_dims(6144 // 64, 0.25), "hfgptneoxconfig",
                "GPTNeoXConfig defaults (the 20B model): hidden_size 6144, 64 heads, rotary_pct 0.25"),
    PartialRope("gpt-j-6b", "GPT-J-6B", 4096 // 16, 64, "hfgptjconfig",
                "GPTJConfig defaults (gpt-j-6B): n_embd 4096, n_head 16, rotary_dim 64"),
    PartialRope("phi-1", "Phi-1", 2048 // 32, partial_rotary_dims(2048 // 32, 0.5), "hfphiconfig",
                "PhiConfig defaults (microsoft/phi-1): hidden_size 2048, 32 heads, partial_rotary_factor 0.5"),
    PartialRope("phi-2", "Phi-2", 2560 // 32, partial_rotary_dims(2560 // 32, 0.4), "phi2config",
                "microsoft/phi-2 config.json: hidden_size 2560, 32 heads, partial_rotary_factor 0.4"),
    PartialRope("deepseek-v3.2-indexer", "DeepSeek-V3.2-Exp indexer", 128, 64, "deepseekv32code",
                "DeepSeek-V3.2-Exp inference/config_671B_v3.2.json index_head_dim 128, qk_rope_head_dim 64; "
                "model.py Indexer.forward rotates the first 64"),
)

#: Partial RoPE of released models, by name; MLA's split is read from ``MODEL_FACTS`` instead.
PARTIAL_ROPE = MappingProxyType({p.name: p for p in _PARTIAL})


def round_bf16(x):
    """Round to bfloat16 (ties to even) in plain NumPy: float32's top 16 bits, the rest rounded away.

    bfloat16 keeps float32's 8 exponent bits and 7 of its 23 fraction bits, so 8 significant
    bits: integers are exact up to 256, and the spacing at ``2**e`` is ``2**(e - 7)``. The input
    goes through float32 first (as a cast from fp32 activations does); NaN and infinities are not
    handled (positions and angles are finite).

    Parameters
    ----------
    x : array_like of float

    Returns
    -------
    ndarray of float64, shape of ``x``

    Book: chapter "Where positions come from", section on RoPE in fp32.
    """
    x32 = np.asarray(x, dtype=np.float32)
    if not np.isfinite(x32).all():
        raise ValueError("round_bf16 takes finite numbers only (positions and angles)")
    bits = x32.view(np.uint32).astype(np.uint64)  # (...): the float32 bit patterns, widened against overflow
    # numpy constants, not Python ints: numpy 1.x (the browser edition's) has no uint64-by-int64 shift
    half, one, sixteen, top = np.uint64(0x7FFF), np.uint64(1), np.uint64(16), np.uint64(0xFFFF0000)
    rounded = (bits + half + ((bits >> sixteen) & one)) & top  # round to nearest even on bit 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)
