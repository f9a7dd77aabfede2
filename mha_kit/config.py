"""Attention shapes: validated configs (the real-model presets are in :mod:`mha_kit.models`).

Notation used across the project (see the book's notation page):
``n`` tokens (queries), ``s`` keys / cache length, ``d`` model width, ``h`` query heads,
``h_kv`` key-value heads, ``g = h // h_kv`` group size, ``d_h`` head size, ``d_c`` latent size.
"""
from __future__ import annotations

import functools
import math
import numbers
import warnings
from dataclasses import dataclass, field, replace

import numpy as np


def type_name(value) -> str:
    """The name of ``value``'s type for a message; a numpy scalar by its dtype (``bool``, ``float64``),
    which numpy 1.25 and 2 spell alike (the scalar type of ``np.bool_`` is ``bool_`` before numpy 2)."""
    return value.dtype.name if isinstance(value, np.generic) else type(value).__name__


def check_positive_int(name: str, value) -> int:
    """Return ``value`` as an ``int`` or raise ``ValueError`` naming ``name``.

    Booleans and floats are refused, even ``8.0``: a shape is a count, and a float that
    slipped in usually means a ``/`` that should have been ``//``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r} ({type_name(value)})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def check_positive_number(name: str, value) -> float:
    """``value`` as a float if it is a positive finite real number; otherwise ``ValueError`` naming ``name``.

    For rates, prices, sizes in bytes and times, where a float is expected (``check_positive_int`` is for
    counts). Booleans are refused.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def renamed_keyword(old: str, new: str):
    """Decorator: accept the keyword ``old`` as a deprecated alias of ``new``.

    A call with ``old=`` warns (``FutureWarning`` naming ``new``) and passes the value on as ``new=``;
    a call with both raises ``TypeError``. Stacked decorators share one wrapper, so the warning
    points at the caller's line. Kept only where a chapter or an exercise used the old name.
    """
    def decorate(func):
        renames = {**getattr(func, "_renamed_keywords", {}), old: new}
        target = getattr(func, "_renamed_target", func)

        @functools.wraps(target)
        def wrapper(*args, **kwargs):
            for was, now in renames.items():
                if was in kwargs:
                    if now in kwargs:
                        raise TypeError(f"{target.__name__}() got both {was}= and {now}=; "
                                        f"{was} is the old name of {now}: pass only {now}=")
                    warnings.warn(f"{target.__name__}(): the keyword {was}= is renamed {now}=; pass {now}= instead",
                                  FutureWarning, stacklevel=2)
                    kwargs[now] = kwargs.pop(was)
            return target(*args, **kwargs)
        wrapper._renamed_keywords, wrapper._renamed_target = renames, target
        return wrapper
    return decorate


@dataclass(frozen=True)
class AttentionConfig:
    """Shape of one multi-head (MHA), grouped-query (GQA) or multi-query (MQA) attention layer.

    Parameters
    ----------
    d_model : int
        Model width ``d``.
    num_heads : int
        Query heads ``h``.
    num_kv_heads : int, optional
        Key-value heads ``h_kv``; ``None`` means ``num_heads`` (MHA), ``1`` is MQA.
    head_dim : int, optional
        Head size ``d_h``; ``None`` means ``d_model // num_heads``, which must then be exact.
    num_layers : int
        Layers of this shape in the model (only totals such as the cache per token use it).
    name, source : str, optional
        A label for tables, and where the numbers come from.

    Book: chapter "From first principles", step 3.
    """

    d_model: int  # d, the width of every token vector
    num_heads: int  # h, query heads
    num_kv_heads: int | None = None  # h_kv, key-value heads (None -> num_heads)
    head_dim: int | None = None  # d_h (None -> d_model // num_heads)
    num_layers: int = 1  # layers of this shape
    name: str | None = None  # label for tables and plots
    source: str | None = field(default=None, compare=False)  # citation for the numbers

    def __post_init__(self):
        d = check_positive_int("d_model", self.d_model)
        h = check_positive_int("num_heads", self.num_heads)
        h_kv = h if self.num_kv_heads is None else check_positive_int("num_kv_heads", self.num_kv_heads)
        if h % h_kv:
            raise ValueError(f"num_heads ({h}) must be divisible by num_kv_heads ({h_kv})")
        if self.head_dim is None:
            if d % h:
                raise ValueError(
                    f"d_model ({d}) must be divisible by num_heads ({h}) when head_dim is not given"
                )
            d_h = d // h
        else:
            d_h = check_positive_int("head_dim", self.head_dim)
        layers = check_positive_int("num_layers", self.num_layers)
        for key, value in dict(d_model=d, num_heads=h, num_kv_heads=h_kv, head_dim=d_h, num_layers=layers).items():
            object.__setattr__(self, key, value)

    @property
    def group_size(self) -> int:
        """``g = h // h_kv``: query heads that share one key-value head."""
        return self.num_heads // self.num_kv_heads

    @property
    def variant(self) -> str:
        """``"mha"``, ``"mqa"`` or ``"gqa"``, from the number of key-value heads."""
        if self.num_kv_heads == self.num_heads:
            return "mha"
        return "mqa" if self.num_kv_heads == 1 else "gqa"

    def with_kv_heads(self, num_kv_heads: int | None) -> "AttentionConfig":
        """The same layer with another number of key-value heads (``None`` -> MHA)."""
        label = None if self.name is None else f"{self.name} (h_kv={num_kv_heads or self.num_heads})"
        return replace(self, num_kv_heads=num_kv_heads, name=label)


@dataclass(frozen=True)
class LatentAttentionConfig:
    """Shape of a multi-head latent attention (MLA) layer, as in DeepSeek-V2 (arXiv:2405.04434).

    The cache holds, per token and layer, one latent ``c_KV`` of ``kv_lora_rank`` numbers and
    one rotary key shared by all heads of ``qk_rope_head_dim`` numbers; the per-head keys and
    values are up-projected from the latent when needed (or the up-projections are absorbed).

    Book: chapter "Trade-offs", section on MLA.
    """

    d_model: int  # d
    num_heads: int  # h, query heads (and heads after up-projection)
    kv_lora_rank: int  # d_c, width of the cached latent
    qk_rope_head_dim: int  # d_h^R, width of the decoupled rotary key (shared, cached)
    qk_nope_head_dim: int  # per-head query/key part without rotary embedding
    v_head_dim: int  # per-head value size
    q_lora_rank: int | None = None  # d_c', width of the query latent (None: no query compression)
    num_layers: int = 1
    name: str | None = None
    source: str | None = field(default=None, compare=False)

    def __post_init__(self):
        for key in ("d_model", "num_heads", "kv_lora_rank", "qk_rope_head_dim",
                    "qk_nope_head_dim", "v_head_dim", "num_layers"):
            object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))
        if self.q_lora_rank is not None:
            object.__setattr__(self, "q_lora_rank", check_positive_int("q_lora_rank", self.q_lora_rank))
        if self.qk_rope_head_dim % 2:
            raise ValueError(
                f"qk_rope_head_dim ({self.qk_rope_head_dim}) must be even: rotary embedding turns pairs"
            )

    variant = "mla"

    @property
    def cache_elements_per_layer(self) -> int:
        """Numbers cached per token per layer: ``kv_lora_rank + qk_rope_head_dim``."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def qk_head_dim(self) -> int:
        """Per-head query/key size seen by the dot product: nope part plus rope part."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim


# The presets (real models) are records in mha_kit/models.py: PRESETS, MODEL_FACTS, get_preset.
