"""The position encodings beyond sinusoids, RoPE and ALiBi: tables, relative buckets, per-pair rescaling.

* :func:`learned_position_params`: the rows of a learned absolute table (BERT, GPT-2);
* :func:`shaw_relative_index`: Shaw et al.'s clipped relative distance, an index into ``2k + 1``
  learned embeddings;
* :func:`t5_relative_bucket` and :func:`t5_bucket_ranges`: T5's bucketed relative bias, exactly
  as Hugging Face's ``T5Attention._relative_position_bucket`` computes it;
* :func:`longrope_inv_freq`: LongRoPE's per-pair rescale factors, as transformers' ``longrope``
  type applies them, with :data:`PHI35_MINI_LONGROPE`, the factors of a released model;
* :func:`rope_layer_mask` and :func:`llama4_attention_scale`: Llama 4's NoPE layers and the query
  scale its NoPE layers apply; :data:`ROPE_LAYOUTS` holds Llama 4's and Gemma 3's settings.

Book: chapter "Position encodings, the whole family".
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .config import check_positive_int


def learned_position_params(max_positions, d_model):
    """Parameters of a learned absolute position table: one ``d_model`` row per position.

    BERT's and GPT-2's ``max_position_embeddings x hidden_size`` embedding; a position at or past
    ``max_positions`` has no row, which is the hard length limit of such a model.

    Book: chapter "Position encodings, the whole family", section "Learned absolute positions".
    """
    return check_positive_int("max_positions", max_positions) * check_positive_int("d_model", d_model)


def shaw_relative_index(n_queries, n_keys, max_relative_position):
    """Shaw et al.'s index ``clip(j - i, -k, k) + k`` of the relative embedding of key ``j`` for query ``i``.

    Shaw, Uszkoreit and Vaswani (2018), sec. 3.2: one learned vector per clipped distance,
    ``2k + 1`` of them (for keys, ``a^K``, and for values, ``a^V``), so every distance beyond ``k``
    shares the vector of distance ``k``.

    Returns
    -------
    ndarray of int, shape (n_queries, n_keys), values in ``[0, 2k]``.

    Book: chapter "Position encodings, the whole family", section "Shaw et al.'s relative positions".
    """
    n, s = check_positive_int("n_queries", n_queries), check_positive_int("n_keys", n_keys)
    k = check_positive_int("max_relative_position", max_relative_position)
    distance = np.arange(s)[None, :] - np.arange(n)[:, None]  # (n, s): j - i
    return np.clip(distance, -k, k) + k


def t5_relative_bucket(relative_position, bidirectional, num_buckets=32, max_distance=128):
    """T5's bucket of each relative position ``key - query``, as transformers' ``T5Attention`` computes it.

    Follows ``T5Attention._relative_position_bucket`` in transformers' ``modeling_t5.py`` line
    by line. Bidirectional (the encoder): half the buckets are for keys after the query
    (``relative_position > 0``), half for the rest. Unidirectional (the decoder): keys after the
    query fall in bucket 0 with the query itself (the causal mask hides them anyway). Within each
    half, distances below ``max_exact = buckets // 2`` get a bucket each; larger ones share buckets
    spaced logarithmically up to ``max_distance``, and everything farther shares the last bucket.

    Parameters
    ----------
    relative_position : array_like of int
        ``memory_position - context_position`` (key minus query), any shape.
    bidirectional : bool
    num_buckets, max_distance : int
        T5's ``relative_attention_num_buckets`` (32) and ``relative_attention_max_distance`` (128).

    Returns
    -------
    ndarray of int64, same shape, values in ``[0, num_buckets)``.

    Book: chapter "Position encodings, the whole family", section "T5's bucketed relative bias".
    """
    relative_position = np.asarray(relative_position)
    if not np.issubdtype(relative_position.dtype, np.integer):
        raise ValueError(f"relative_position must hold integers, got dtype {relative_position.dtype}")
    buckets = check_positive_int("num_buckets", num_buckets)
    max_distance = check_positive_int("max_distance", max_distance)
    relative_buckets = np.zeros(relative_position.shape, dtype=np.int64)
    if bidirectional:
        buckets //= 2
        relative_buckets += (relative_position > 0).astype(np.int64) * buckets
        relative_position = np.abs(relative_position)
    else:
        relative_position = -np.minimum(relative_position, 0)
    max_exact = buckets // 2
    if max_exact < 1 or max_distance <= max_exact:
        raise ValueError(f"need num_buckets per direction >= 2 and max_distance ({max_distance}) > "
                         f"max_exact ({max_exact})")
    is_small = relative_position < max_exact
    # float32 as in the reference; distances below max_exact take the np.where's other branch, so
    # clamping them to 1 only keeps log(0) (and its cast warning) out of the discarded values
    distance = np.maximum(relative_position, 1).astype(np.float32)
    scaled = np.log(distance / max_exact) / math.log(max_distance / max_exact)
    if_large = max_exact + (scaled * (buckets - max_exact)).astype(np.int64, copy=False)
    if_large = np.minimum(if_large, buckets - 1)
    return relative_buckets + np.where(is_small, relative_position, if_large)


def t5_bucket_ranges(bidirectional, num_buckets=32, max_distance=128, max_offset=1000):
    """Which distances share each bucket: ``{bucket: (first, last)}`` over ``|offset| <= max_offset``.

    Offsets are ``key - query``; for a bidirectional table the keys before the query (offsets
    ``<= 0``) and after it (``> 0``) fill different halves. A range whose ``last`` is
    ``max_offset`` (or ``-max_offset``) runs on without end.

    Book: chapter "Position encodings, the whole family", section "T5's bucketed relative bias".
    """
    offsets = np.arange(-check_positive_int("max_offset", max_offset), max_offset + 1)
    bucket = t5_relative_bucket(offsets, bidirectional, num_buckets, max_distance)
    ranges = {}
    for b in np.unique(bucket):
        members = offsets[bucket == b]
        near, far = (members.max(), members.min()) if members.max() <= 0 else (members.min(), members.max())
        ranges[int(b)] = (int(near), int(far))
    return ranges


def _factors(values, pairs, name):
    values = np.asarray(values, dtype=float)
    if values.shape != (pairs,) or not np.all(values > 0):
        raise ValueError(f"{name} must hold {pairs} positive numbers (one per RoPE pair), got shape {values.shape}")
    return values


def longrope_inv_freq(head_dim, base, short_factor, long_factor, original_max_position_embeddings,
                      max_position_embeddings, seq_len=None):
    """LongRoPE frequencies ``theta_i / lambda_i`` and the attention factor, as transformers applies them.

    Pair ``i`` is slowed by its own factor ``lambda_i``, searched per pair (Ding et al. 2024):
    ``inv_freq = 1 / (lambda * base**(2i/r))``. transformers' ``longrope`` type uses
    ``long_factor`` when the sequence is longer than ``original_max_position_embeddings`` and
    ``short_factor`` otherwise (its ``longrope_frequency_update``), and multiplies cos and sin by
    ``sqrt(1 + ln(s) / ln(L))`` with ``s = max_position_embeddings / L`` and ``L`` the original
    length (``_compute_longrope_parameters``).

    Parameters
    ----------
    head_dim : int
        ``r``, the rotated dimensions, even.
    base : float
        ``rope_theta``.
    short_factor, long_factor : sequence of float, length r/2
    original_max_position_embeddings, max_position_embeddings : int
        The pre-training length ``L`` and the extended one.
    seq_len : int, optional
        The current length; default ``max_position_embeddings`` (the long factors).

    Returns
    -------
    inv_freq : ndarray, shape (r/2,)
    attention_factor : float

    Book: chapter "Position encodings, the whole family", section "LongRoPE".
    """
    r = check_positive_int("head_dim", head_dim)
    if r % 2:
        raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {r}")
    trained = check_positive_int("original_max_position_embeddings", original_max_position_embeddings)
    extended = check_positive_int("max_position_embeddings", max_position_embeddings)
    length = extended if seq_len is None else check_positive_int("seq_len", seq_len)
    factors = _factors(long_factor if length > trained else short_factor, r // 2,
                       "long_factor" if length > trained else "short_factor")
    scale = extended / trained
    attention_factor = 1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(trained))
    return 1.0 / (factors * float(base) ** (np.arange(0, r, 2) / r)), attention_factor


def rope_layer_mask(num_layers, no_rope_layer_interval):
    """Which layers rotate (``True``) and which are NoPE layers (``False``), Llama 4's rule.

    transformers' ``Llama4TextConfig``: layer ``i`` (from 0) uses RoPE unless
    ``(i + 1) % no_rope_layer_interval == 0``, so with the interval 4, layers 3, 7, 11, ... carry
    no position at all.

    Returns
    -------
    ndarray of bool, shape (num_layers,)

    Book: chapter "Position encodings, the whole family", section "NoPE layers".
    """
    layers = np.arange(check_positive_int("num_layers", num_layers))
    return (layers + 1) % check_positive_int("no_rope_layer_interval", no_rope_layer_interval) != 0


def llama4_attention_scale(positions, floor_scale=8192, attn_scale=0.1):
    """Llama 4's query multiplier on NoPE layers: ``1 + attn_scale * ln(floor((p + 1) / floor_scale) + 1)``.

    transformers' ``Llama4TextAttention`` multiplies the queries of NoPE layers by this factor
    (``attn_temperature_tuning``): 1 for the first ``floor_scale - 1`` positions, then growing
    with the logarithm of the position, which sharpens the softmax over long contexts.

    Returns
    -------
    ndarray of float, shape of ``positions``

    Book: chapter "Position encodings, the whole family", section "NoPE layers".
    """
    p = np.asarray(positions)
    if not np.issubdtype(p.dtype, np.integer) or (p < 0).any():
        raise ValueError("positions must be non-negative integers")
    floor = check_positive_int("floor_scale", floor_scale)
    return np.log(np.floor((p + 1.0) / floor) + 1.0) * float(attn_scale) + 1.0


def slowest_wavelength(head_dim, base):
    """Tokens per turn of RoPE's slowest pair: ``2 pi base**((r - 2) / r)``.

    Book: chapter "Position encodings, the whole family", section "NoPE layers".
    """
    r = check_positive_int("head_dim", head_dim)
    if r % 2 or r < 2:
        raise ValueError(f"head_dim must be even, got {r}")
    if not base > 1:
        raise ValueError(f"base must exceed 1, got {base}")
    return 2 * math.pi * float(base) ** ((r - 2) / r)


@dataclass(frozen=True, kw_only=True)
class LongRopeConfig:
    """The ``rope_scaling`` of a model that uses LongRoPE, with where it was read."""

    name: str  # "phi-3.5-mini-instruct"
    title: str  # "Phi-3.5-mini-instruct"
    head_dim: int  # rotated dimensions r = hidden_size / num_attention_heads
    rope_theta: float  # base
    original_max_position_embeddings: int  # pre-training length L
    max_position_embeddings: int  # extended length
    short_factor: tuple  # r/2 factors, used up to L tokens
    long_factor: tuple  # r/2 factors, used beyond L
    cite: str  # references.bib key(s)
    source: str  # where the numbers were read

    def __post_init__(self):
        for key in ("short_factor", "long_factor"):
            object.__setattr__(self, key, tuple(_factors(getattr(self, key), self.head_dim // 2, key).tolist()))
        if self.original_max_position_embeddings >= self.max_position_embeddings:
            raise ValueError(f"original_max_position_embeddings ({self.original_max_position_embeddings}) must be "
                             f"below max_position_embeddings ({self.max_position_embeddings})")


# microsoft/Phi-3.5-mini-instruct config.json, rope_scaling (type "longrope"), 48 factors each
_PHI35_LONG = (
    1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,
    1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863, 3.2300000190734863,
    4.789999961853027, 7.400000095367432, 7.700000286102295, 9.09000015258789, 12.199999809265137,
    17.670000076293945, 24.46000099182129, 28.57000160217285, 30.420001983642578, 30.840002059936523,
    32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,
    50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992, 60.1400032043457,
    62.61000442504883, 62.62000274658203, 62.71000289916992, 63.1400032043457, 63.1400032043457,
    63.77000427246094, 63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
    64.06999969482422, 64.08000183105469, 64.12000274658203, 64.41000366210938, 64.4800033569336,
    64.51000213623047, 64.52999877929688, 64.83999633789062,
)
_PHI35_SHORT = (
    1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842, 1.0499999523162842,
    1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0699999332427979, 1.0999999046325684,
    1.1099998950958252, 1.1599998474121094, 1.1599998474121094, 1.1699998378753662, 1.2899998426437378,
    1.339999794960022, 1.679999828338623, 1.7899998426437378, 1.8199998140335083, 1.8499997854232788,
    1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745, 2.0199997425079346,
    2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0799996852874756,
    2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533, 2.729999542236328,
    2.749999523162842, 2.8399994373321533,
)

#: Phi-3.5-mini-instruct's LongRoPE block (hidden_size 3072 / 32 heads = head_dim 96).
PHI35_MINI_LONGROPE = LongRopeConfig(
    name="phi-3.5-mini-instruct", title="Phi-3.5-mini-instruct", head_dim=96, rope_theta=10000.0,
    original_max_position_embeddings=4096, max_position_embeddings=131072,
    short_factor=_PHI35_SHORT, long_factor=_PHI35_LONG, cite="phi35config,abdin2024phi3",
    source=("microsoft/Phi-3.5-mini-instruct config.json: rope_scaling type 'longrope', hidden_size 3072, "
            "num_attention_heads 32, rope_theta 10000.0, original_max_position_embeddings 4096, "
            "max_position_embeddings 131072; read from two copies of the file that agree (a Microsoft "
            "repository's model-args table and an ONNX test's config), not from the Hub page itself"))


@dataclass(frozen=True, kw_only=True)
class RopeLayout:
    """How a model family places RoPE across layers: bases, NoPE layers, query temperature."""

    name: str  # key of ROPE_LAYOUTS
    title: str  # "Llama 4 Scout"
    head_dim: int  # d_h (all of it rotated)
    rope_theta: float  # base of the RoPE layers (the global layers, for Gemma 3)
    local_rope_theta: float | None = None  # base of the sliding-window layers (Gemma 3)
    no_rope_layer_interval: int | None = None  # every k-th layer is NoPE (Llama 4)
    floor_scale: int | None = None  # Llama 4's attention temperature: positions per step
    attn_scale: float | None = None  # Llama 4's attention temperature: slope of the log
    attention_chunk_size: int | None = None  # Llama 4's RoPE layers attend within chunks of this many tokens
    num_layers: int | None = None  # decoder layers, where the layout needs them
    cite: str = ""  # references.bib key(s)
    source: str = ""  # where the numbers were read


_LAYOUTS = (
    RopeLayout(name="llama-4-scout", title="Llama 4 Scout", num_layers=48, head_dim=128, rope_theta=500000.0,
               no_rope_layer_interval=4, floor_scale=8192, attn_scale=0.1, attention_chunk_size=8192,
               cite="hfllama4,meta2025llama4",
               source=("transformers models/llama4/configuration_llama4.py Llama4TextConfig defaults (documented "
                       "as the Llama 4 Scout shape: 48 layers, head_dim 128, rope_theta 500000, "
                       "no_rope_layer_interval 4, floor_scale 8192, attn_scale 0.1, attention_chunk_size 8192; "
                       "layer_types: chunked_attention for the RoPE layers, full_attention for the NoPE "
                       "layers); modeling_llama4.py "
                       "Llama4TextAttention (use_rope, attn_temperature_tuning)")),
    RopeLayout(name="gemma-3", title="Gemma 3", head_dim=256, rope_theta=1_000_000.0,
               local_rope_theta=10_000.0, cite="gemma3report,hfgemma3",
               source=("Gemma 3 report arXiv:2503.19786 sec. 2 (RoPE base 1M on global layers, 10k on local "
                       "layers); transformers models/gemma3/configuration_gemma3.py Gemma3TextConfig defaults "
                       "(head_dim 256, rope_theta 1000000.0, rope_local_base_freq 10000.0)")),
)

#: Read-only table of the RoPE layouts the chapter compares.
ROPE_LAYOUTS = {layout.name: layout for layout in _LAYOUTS}


@dataclass(frozen=True, kw_only=True)
class LearnedPositionTable:
    """A model with a learned absolute position table, ``max_positions`` rows of ``d_model``."""

    name: str  # key of LEARNED_TABLES
    title: str  # "BERT-base"
    max_positions: int  # config max_position_embeddings
    d_model: int  # hidden_size
    cite: str  # references.bib key(s)
    source: str  # where the numbers were read

    @property
    def params(self) -> int:
        """Parameters of the table: ``max_positions * d_model``."""
        return learned_position_params(self.max_positions, self.d_model)


_BERT = ("BERT paper arXiv:1810.04805 sec. 3 (H = 768 base, 1024 large) and App. A.2 (512-token sequences); "
         "transformers BertConfig default max_position_embeddings 512")

#: BERT's learned tables (GPT-2's is read from ``MODEL_FACTS["gpt2"]``: ``context_length`` x ``d_model``).
LEARNED_TABLES = {
    "bert-base": LearnedPositionTable(name="bert-base", title="BERT-base", max_positions=512, d_model=768,
                                      cite="devlin2019bert,hfbertconfig", source=_BERT),
    "bert-large": LearnedPositionTable(name="bert-large", title="BERT-large", max_positions=512, d_model=1024,
                                       cite="devlin2019bert,hfbertconfig", source=_BERT),
}
