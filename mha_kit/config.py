"""Attention shapes: validated configs and real-model presets.

Notation used across the project (see the book's notation page):
``n`` tokens (queries), ``s`` keys / cache length, ``d`` model width, ``h`` query heads,
``h_kv`` key-value heads, ``g = h // h_kv`` group size, ``d_h`` head size, ``d_c`` latent size.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field, replace
from types import MappingProxyType


def check_positive_int(name: str, value) -> int:
    """Return ``value`` as an ``int`` or raise ``ValueError`` naming ``name``.

    Booleans and floats are refused, even ``8.0``: a shape is a count, and a float that
    slipped in usually means a ``/`` that should have been ``//``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


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


# Real models. One per line; the source of each is in shared/facts/model_configs.json and in
# the ``source`` field. Layers are the decoder's (Transformer base: the 6 decoder layers).
_VASWANI = "arXiv:1706.03762 sec. 3.1, 3.2.2 (N=6, d_model=512, h=8, d_k=64)"
_LLAMA3 = "meta-llama/llama-models sku_list.py; Llama 3 paper arXiv:2407.21783 Table 3"
_DSV2 = "DeepSeek-V2 arXiv:2405.04434 sec. 3.1.2; deepseek-ai/DeepSeek-V2 config.json"
_PRESET_LIST = (
    AttentionConfig(512, 8, 8, 64, 6, "transformer-base", _VASWANI),
    AttentionConfig(768, 12, 12, 64, 12, "gpt2", "HF transformers GPT2Config defaults (openai-community/gpt2)"),
    AttentionConfig(4096, 32, 8, 128, 32, "llama-3-8b", _LLAMA3),
    AttentionConfig(8192, 64, 8, 128, 80, "llama-3-70b", _LLAMA3),
    AttentionConfig(16384, 128, 8, 128, 126, "llama-3.1-405b", _LLAMA3),
    AttentionConfig(4096, 32, 8, 128, 32, "mistral-7b", "Mistral 7B arXiv:2310.06825 Table 1"),
    AttentionConfig(4544, 71, 1, 64, 32, "falcon-7b", "tiiuae/falcon-7b config.json (multi_query=true)"),
    AttentionConfig(8192, 128, 8, 64, 60, "falcon-40b", "tiiuae/falcon-40b config.json (num_kv_heads=8)"),
    AttentionConfig(8192, 64, 8, 128, 95, "deepseek-67b", "DeepSeek LLM arXiv:2401.02954 Table 2"),
    AttentionConfig(3584, 28, 4, 128, 28, "qwen2.5-7b", "Qwen/Qwen2.5-7B config.json"),
    AttentionConfig(3584, 16, 8, 256, 42, "gemma-2-9b", "google/gemma-2-9b config.json (head_dim=256 set explicitly)"),
    LatentAttentionConfig(5120, 128, 512, 64, 128, 128, 1536, 60, "deepseek-v2", _DSV2),
    LatentAttentionConfig(2048, 16, 512, 64, 128, 128, None, 27, "deepseek-v2-lite", "DeepSeek-V2 arXiv:2405.04434 App. B.1"),
)

#: Read-only mapping from a short name (``"llama-3-70b"``) to the config of that model.
PRESETS = MappingProxyType({cfg.name: cfg for cfg in _PRESET_LIST})


def get_preset(name: str):
    """Return ``PRESETS[name]`` or raise ``ValueError`` listing the known names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}") from None
