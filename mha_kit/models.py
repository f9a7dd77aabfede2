"""Model facts: one record per real model, the one place the book reads a model's numbers from.

Each :class:`ModelFacts` record carries the attention shape (``.config``, the same object as
``PRESETS[name]``), the bibliography key of its source (``.cite``, as ``{cite}`` takes it), its
context length, sliding window, vocabulary and feed-forward sizes, and the primary source the
numbers were read from. ``tests/data/model_configs.json`` holds the same facts with longer notes;
``tests/test_presets.py`` checks every record against it. A new model is one record here plus
one row in that test.

>>> import mha_kit as mk
>>> mk.MODEL_FACTS["mistral-7b"].sliding_window
4096
>>> mk.MODEL_FACTS["llama-3-70b"].config is mk.PRESETS["llama-3-70b"]
True
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from .config import AttentionConfig, LatentAttentionConfig, check_positive_int

#: Layouts :func:`mha_kit.dense_decoder_params` can count. ``"llama"``: pre-norm decoder with
#: RMSNorm (one weight vector of ``d`` per norm), a SwiGLU feed-forward of three ``d x d_ff``
#: matrices, no biases, and an output head not tied to the embeddings.
PARAM_LAYOUTS = ("llama",)


@dataclass(frozen=True, kw_only=True)
class ModelFacts:
    """Everything the book uses about one published model.

    Parameters
    ----------
    name : str
        Short preset name, the key of :data:`PRESETS` (``"llama-3-70b"``).
    title : str
        The model's name in prose and tables (``"Llama 3 70B"``).
    config : AttentionConfig or LatentAttentionConfig
        The attention shape; its ``name`` and ``source`` are filled in from this record.
    cite : str
        ``references.bib`` key(s), comma-separated, exactly as ``{cite}`` takes them.
    source : str
        Where the numbers were read (paper section, configuration file).
    context_length : int or None
        Tokens of context the model was released for; ``None`` for no fixed maximum.
    sliding_window : int, optional
        Keys each query sees in sliding-window attention; ``None`` for full attention.
    total_params, active_params : int, optional
        The published parameter count of the whole model and, for a mixture of experts, the
        parameters activated per token. Set for records whose count
        :func:`mha_kit.dense_decoder_params` cannot derive (MoE); ``None`` otherwise.
    vocab_size, intermediate_size : int, optional
        Vocabulary ``V`` and feed-forward width ``d_ff`` (for MoE models, the dense layer's).
    param_layout : str, optional
        One of :data:`PARAM_LAYOUTS` when :func:`mha_kit.dense_decoder_params` may count it.
    rope_theta : float, optional
        RoPE base (the config's ``rope_theta``); ``None`` when not recorded (or no RoPE).
    rope_scaling : dict, optional
        The config's ``rope_scaling`` block, stored read-only, as :func:`mha_kit.rope_inv_freq`
        takes it; ``None`` for plain RoPE or not recorded.
    rope_source : str, optional
        Where ``rope_theta`` and ``rope_scaling`` were read (chapter "Stretching RoPE").
    num_experts, experts_per_token, moe_intermediate_size : int, optional
        A mixture of experts: routed experts in each MoE layer (config ``n_routed_experts`` or
        ``num_experts``), how many of them each token is routed to (``num_experts_per_tok``), and the
        feed-forward width of one expert (``moe_intermediate_size``); all three or none.
    num_shared_experts : int
        Experts every token passes through besides its routed ones (``n_shared_experts``; 0 if none).
    num_dense_layers : int
        Leading layers with a dense feed-forward instead of experts (``first_k_dense_replace``).
    attn_logit_softcap, final_logit_softcap : float, optional
        Caps ``c`` of logit soft-capping, ``c * tanh(x / c)``, on the attention scores and on the
        output logits (Gemma 2: 50.0 and 30.0); ``None`` for no cap. See :func:`mha_kit.soft_cap`.

    Book: chapter "References" (the table of models and their sources).
    """

    name: str  # key of PRESETS
    title: str  # "Llama 3 70B"
    config: AttentionConfig | LatentAttentionConfig  # attention shape of every layer
    cite: str  # references.bib key(s), "llama3,llama3config"
    source: str  # primary source of the numbers
    context_length: int | None  # released context, tokens (None: no fixed maximum)
    sliding_window: int | None = None  # keys per query under sliding-window attention
    total_params: int | None = None  # published count, all experts (MoE); None: derive or unknown
    active_params: int | None = None  # MoE: parameters activated per token
    vocab_size: int | None = None  # V
    intermediate_size: int | None = None  # d_ff (MoE models: the dense layer's)
    param_layout: str | None = None  # how dense_decoder_params counts the whole model
    rope_theta: float | None = None  # RoPE base, config rope_theta
    rope_scaling: Mapping | None = field(default=None, compare=False)  # config rope_scaling, read-only
    rope_source: str | None = None  # where the two rope fields were read
    attn_logit_softcap: float | None = None  # cap of the attention scores (HF attn_logit_softcapping)
    final_logit_softcap: float | None = None  # cap of the output logits (HF final_logit_softcapping)
    num_experts: int | None = None  # MoE: routed experts per MoE layer
    experts_per_token: int | None = None  # MoE: routed experts each token activates (top-k)
    moe_intermediate_size: int | None = None  # MoE: d_ff of one expert
    num_shared_experts: int = 0  # MoE: experts every token passes through
    num_dense_layers: int = 0  # MoE: leading layers with a dense feed-forward

    def __post_init__(self):
        if not isinstance(self.config, (AttentionConfig, LatentAttentionConfig)):
            kind = type(self.config).__name__
            raise ValueError(f"config must be an AttentionConfig or LatentAttentionConfig, got {kind}")
        if self.config.name not in (None, self.name):
            raise ValueError(f"config.name ({self.config.name!r}) must be None or the record's name ({self.name!r})")
        for key in ("title", "cite", "source"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key).strip():
                raise ValueError(f"{key} must be a non-empty string, got {getattr(self, key)!r}")
        for key in ("context_length", "sliding_window", "total_params", "active_params", "vocab_size",
                    "intermediate_size"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))
        if self.active_params is not None and (self.total_params is None or self.active_params > self.total_params):
            raise ValueError(f"active_params ({self.active_params}) needs total_params at least as large, "
                             f"got {self.total_params}")
        window, context = self.sliding_window, self.context_length
        if None not in (window, context) and window > context:
            raise ValueError(f"sliding_window ({window}) must not exceed context_length ({context})")
        if self.param_layout is not None and self.param_layout not in PARAM_LAYOUTS:
            raise ValueError(f"param_layout must be None or one of {PARAM_LAYOUTS}, got {self.param_layout!r}")
        for key in ("attn_logit_softcap", "final_logit_softcap"):
            cap = getattr(self, key)
            bad = isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 < cap < float("inf")
            if cap is not None and bad:
                raise ValueError(f"{key} must be None or a positive number, got {cap!r}")
        object.__setattr__(self, "config", replace(self.config, name=self.name, source=self.source))
        self._check_rope()
        self._check_experts()

    def _check_experts(self):
        """MoE fields: all three routed-expert fields or none, top-k within the experts, a dense prefix."""
        routed = (self.num_experts, self.experts_per_token, self.moe_intermediate_size)
        if any(value is not None for value in routed) and None in routed:
            raise ValueError(f"{self.name}: num_experts, experts_per_token and moe_intermediate_size go together, "
                             f"got {routed}")
        for key in ("num_experts", "experts_per_token", "moe_intermediate_size"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))
        for key in ("num_shared_experts", "num_dense_layers"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key} must be a non-negative integer, got {value!r}")
        if self.num_experts is not None and self.experts_per_token > self.num_experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) must not exceed num_experts "
                             f"({self.num_experts})")
        if self.num_dense_layers >= self.config.num_layers:
            raise ValueError(f"num_dense_layers ({self.num_dense_layers}) must be below num_layers "
                             f"({self.config.num_layers})")

    @property
    def is_moe(self) -> bool:
        """Whether the feed-forward layers are a mixture of routed experts."""
        return self.num_experts is not None

    @property
    def moe_layers(self) -> int:
        """Layers whose feed-forward is a mixture of experts (0 for a dense model)."""
        return self.config.num_layers - self.num_dense_layers if self.is_moe else 0

    def _check_rope(self):
        """RoPE fields: a positive base, a read-only scaling block of a known type, and their source."""
        from .rope_scaling import rope_type_of

        theta = self.rope_theta
        if theta is not None and (isinstance(theta, bool) or not isinstance(theta, (int, float))
                                  or not math.isfinite(theta) or theta <= 0):
            raise ValueError(f"rope_theta must be a positive number or None, got {theta!r}")
        if self.rope_scaling is not None:
            if theta is None:
                raise ValueError(f"{self.name}: rope_scaling needs rope_theta, the base it scales")
            rope_type_of(self.rope_scaling)  # a dict with a known rope_type, or ValueError
            object.__setattr__(self, "rope_scaling", MappingProxyType(dict(self.rope_scaling)))
        if theta is not None and not (isinstance(self.rope_source, str) and self.rope_source.strip()):
            raise ValueError(f"{self.name}: rope_theta needs rope_source, where it was read")

    @property
    def cite_keys(self) -> tuple:
        """The bibliography keys one by one: ``("llama3", "llama3config")``."""
        return tuple(key.strip() for key in self.cite.split(","))


_VASWANI = "arXiv:1706.03762 sec. 3.1, 3.2.2 (N=6, d_model=512, h=8, d_k=64)"
_LLAMA3 = "meta-llama/llama-models sku_list.py; Llama 3 paper arXiv:2407.21783 Table 3"
_DSV2 = "DeepSeek-V2 arXiv:2405.04434 sec. 3.1.2; deepseek-ai/DeepSeek-V2 config.json"
_DSV3 = ("DeepSeek-V3 arXiv:2412.19437 sec. 4.2 (61 layers, hidden 7168, 128 heads, d_c 512, d_h^R 64, "
         "1 shared + 256 routed experts of 2048, 8 active, first 3 layers dense); deepseek-ai/DeepSeek-V3 config.json")
_QWEN3_MOE = "Qwen/Qwen3-30B-A3B config.json (model_type qwen3_moe) and model card"

# RoPE of the records that use it; fuller notes in tests/data/model_configs.json ("rope_source").
_LLAMA3_ROPE = "meta-llama/llama-models models/sku_list.py (rope_theta 500000.0); Llama 3 paper sec. 3.2"
_LLAMA31_ROPE = ("meta-llama/llama-models models/sku_list.py (use_scaled_rope=True) and "
                 "models/llama3/reference_impl/model.py apply_scaling; Llama 3.1 config.json rope_scaling")
_LLAMA31_SCALING = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position_embeddings=8192)
_QWEN25_ROPE = ("Qwen/Qwen2.5-7B config.json (rope_theta); Qwen2.5 Instruct model card, 'Processing Long "
                "Texts': the YaRN block to add for inputs over 32,768 tokens")
_QWEN25_SCALING = dict(type="yarn", factor=4.0, original_max_position_embeddings=32768)
_LLAMA32_1B = "meta-llama/Llama-3.2-1B config.json (tie_word_embeddings true)"
_LLAMA32_ROPE = "meta-llama/Llama-3.2-1B config.json (rope_theta 500000.0, rope_scaling rope_type llama3, factor 32)"
_LLAMA32_SCALING = dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position_embeddings=8192)
_DSV2_ROPE = "DeepSeek-V2 family config.json rope_scaling; DeepSeek-V2 arXiv:2405.04434 sec. 3.1.4"
_DSV2_SCALING = dict(type="yarn", factor=40, original_max_position_embeddings=4096, beta_fast=32, beta_slow=1,
                     mscale=0.707, mscale_all_dim=0.707)

# One record per model. Layers are the decoder's (Transformer base: its 6 decoder layers).
# Fuller notes on every number: tests/data/model_configs.json.
_RECORDS = (
    ModelFacts(
        name="transformer-base", title="Transformer (base)", cite="vaswani2017attention", source=_VASWANI,
        config=AttentionConfig(d_model=512, num_heads=8, num_kv_heads=8, head_dim=64, num_layers=6),
        context_length=None, intermediate_size=2048),  # sinusoidal positions: no fixed maximum
    ModelFacts(
        name="gpt2", title="GPT-2 small", cite="radford2019gpt2",
        source="HF transformers GPT2Config defaults (openai-community/gpt2)",
        config=AttentionConfig(d_model=768, num_heads=12, num_kv_heads=12, head_dim=64, num_layers=12),
        context_length=1024, vocab_size=50257, intermediate_size=3072),
    ModelFacts(
        name="llama-3-8b", title="Llama 3 8B", cite="llama3,llama3config", source=_LLAMA3,
        config=AttentionConfig(d_model=4096, num_heads=32, num_kv_heads=8, head_dim=128, num_layers=32),
        context_length=8192, vocab_size=128256, intermediate_size=14336, param_layout="llama",
        rope_theta=500000.0, rope_source=_LLAMA3_ROPE),
    ModelFacts(
        name="llama-3-70b", title="Llama 3 70B", cite="llama3,llama3config", source=_LLAMA3,
        config=AttentionConfig(d_model=8192, num_heads=64, num_kv_heads=8, head_dim=128, num_layers=80),
        context_length=8192, vocab_size=128256, intermediate_size=28672, param_layout="llama",
        rope_theta=500000.0, rope_source=_LLAMA3_ROPE),
    ModelFacts(
        name="llama-3.1-405b", title="Llama 3.1 405B", cite="llama3", source=_LLAMA3,
        config=AttentionConfig(d_model=16384, num_heads=128, num_kv_heads=8, head_dim=128, num_layers=126),
        context_length=131072, vocab_size=128256, intermediate_size=53248, param_layout="llama",
        rope_theta=500000.0, rope_scaling=_LLAMA31_SCALING, rope_source=_LLAMA31_ROPE),
    ModelFacts(
        name="mistral-7b", title="Mistral 7B", cite="mistral7b", source="Mistral 7B arXiv:2310.06825 Table 1",
        config=AttentionConfig(d_model=4096, num_heads=32, num_kv_heads=8, head_dim=128, num_layers=32),
        context_length=8192, sliding_window=4096, vocab_size=32000, intermediate_size=14336,
        param_layout="llama"),
    ModelFacts(
        name="falcon-7b", title="Falcon-7B", cite="falcon", source="tiiuae/falcon-7b config.json (multi_query=true)",
        config=AttentionConfig(d_model=4544, num_heads=71, num_kv_heads=1, head_dim=64, num_layers=32),
        context_length=2048, vocab_size=65024, intermediate_size=18176),
    ModelFacts(
        name="falcon-40b", title="Falcon-40B", cite="falcon", source="tiiuae/falcon-40b config.json (num_kv_heads=8)",
        config=AttentionConfig(d_model=8192, num_heads=128, num_kv_heads=8, head_dim=64, num_layers=60),
        context_length=2048, vocab_size=65024, intermediate_size=32768),  # d_ff = 4d, inferred
    ModelFacts(
        name="deepseek-67b", title="DeepSeek LLM 67B", cite="deepseekllm",
        source="DeepSeek LLM arXiv:2401.02954 Table 2",
        config=AttentionConfig(d_model=8192, num_heads=64, num_kv_heads=8, head_dim=128, num_layers=95),
        context_length=4096, vocab_size=102400, intermediate_size=22016),
    ModelFacts(
        name="qwen2.5-7b", title="Qwen2.5-7B", cite="qwen25", source="Qwen/Qwen2.5-7B config.json",
        config=AttentionConfig(d_model=3584, num_heads=28, num_kv_heads=4, head_dim=128, num_layers=28),
        context_length=131072, vocab_size=152064, intermediate_size=18944,
        rope_theta=1000000.0, rope_scaling=_QWEN25_SCALING, rope_source=_QWEN25_ROPE),
    ModelFacts(
        name="gemma-2-9b", title="Gemma 2 9B", cite="gemma2",
        source="google/gemma-2-9b config.json (head_dim=256 set explicitly)",
        config=AttentionConfig(d_model=3584, num_heads=16, num_kv_heads=8, head_dim=256, num_layers=42),
        context_length=8192, sliding_window=4096,  # window on every other layer; the rest are global
        vocab_size=256000, intermediate_size=14336,
        # config.json attn_logit_softcapping / final_logit_softcapping; Gemma 2 paper arXiv:2408.00118 sec. 2
        attn_logit_softcap=50.0, final_logit_softcap=30.0),
    ModelFacts(
        name="deepseek-v2", title="DeepSeek-V2", cite="deepseekv2", source=_DSV2,
        total_params=236_000_000_000, active_params=21_000_000_000,  # sec. 3.1.2: 236B total, 21B per token
        config=LatentAttentionConfig(d_model=5120, num_heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
                                     qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536, num_layers=60),
        context_length=131072, vocab_size=102400, intermediate_size=12288,  # MoE: d_ff of the dense layer
        num_experts=160, experts_per_token=6, moe_intermediate_size=1536, num_shared_experts=2,
        num_dense_layers=1,  # sec. 3.1.2: every FFN but the first layer's is MoE, 2 shared + 160 routed, 6 active
        rope_theta=10000.0, rope_scaling=_DSV2_SCALING, rope_source=_DSV2_ROPE),  # on the rotary key only
    ModelFacts(
        name="deepseek-v2-lite", title="DeepSeek-V2-Lite", cite="deepseekv2",
        source="DeepSeek-V2 arXiv:2405.04434 App. B.1",
        total_params=15_700_000_000, active_params=2_400_000_000,  # App. B.1: 15.7B total, 2.4B per token
        config=LatentAttentionConfig(d_model=2048, num_heads=16, kv_lora_rank=512, qk_rope_head_dim=64,
                                     qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=None, num_layers=27),
        context_length=None, vocab_size=102400, intermediate_size=10944,  # context not verified: left None
        num_experts=64, experts_per_token=6, moe_intermediate_size=1408, num_shared_experts=2,
        num_dense_layers=1),  # App. B.1: every FFN but the first layer's is MoE, 2 shared + 64 routed, 6 active
    ModelFacts(
        name="deepseek-v3", title="DeepSeek-V3", cite="deepseekv3", source=_DSV3,
        total_params=671_000_000_000, active_params=37_000_000_000,  # sec. 4.2: 671B total, 37B per token
        config=LatentAttentionConfig(d_model=7168, num_heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
                                     qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536, num_layers=61),
        context_length=131072, vocab_size=129280, intermediate_size=18432,  # d_ff of the 3 dense layers
        num_experts=256, experts_per_token=8, moe_intermediate_size=2048, num_shared_experts=1,
        num_dense_layers=3),
    ModelFacts(
        name="qwen3-30b-a3b", title="Qwen3-30B-A3B", cite="qwen3", source=_QWEN3_MOE,
        total_params=30_500_000_000, active_params=3_300_000_000,  # model card: 30.5B total, 3.3B activated
        config=AttentionConfig(d_model=2048, num_heads=32, num_kv_heads=4, head_dim=128, num_layers=48),
        context_length=32768, vocab_size=151936, intermediate_size=6144,  # native; config max_position 40,960
        num_experts=128, experts_per_token=8, moe_intermediate_size=768),  # every layer MoE, no shared expert
    ModelFacts(  # embedding tied to the output head: no param_layout counts that, so none is set
        name="llama-3.2-1b", title="Llama 3.2 1B", cite="llama32config", source=_LLAMA32_1B,
        config=AttentionConfig(d_model=2048, num_heads=32, num_kv_heads=8, head_dim=64, num_layers=16),
        context_length=131072, vocab_size=128256, intermediate_size=8192,
        rope_theta=500000.0, rope_scaling=_LLAMA32_SCALING, rope_source=_LLAMA32_ROPE),
)

#: Read-only mapping from a preset name to its :class:`ModelFacts` record.
MODEL_FACTS = MappingProxyType({facts.name: facts for facts in _RECORDS})

#: Read-only mapping from a short name (``"llama-3-70b"``) to the config of that model.
PRESETS = MappingProxyType({name: facts.config for name, facts in MODEL_FACTS.items()})


def _lookup(table, name):
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(table)}") from None


def get_preset(name: str):
    """Return ``PRESETS[name]`` or raise ``ValueError`` listing the known names."""
    return _lookup(PRESETS, name)


def get_model_facts(name: str) -> ModelFacts:
    """Return ``MODEL_FACTS[name]`` or raise ``ValueError`` listing the known names."""
    return _lookup(MODEL_FACTS, name)


@dataclass(frozen=True, kw_only=True)
class LayerLayout:
    """How a model family interleaves sliding-window (local) layers with full-attention (global) ones.

    Layer ``i`` (from 0) is global when ``(i + 1) % (local_per_global + 1) == 0`` and local
    otherwise, the rule of the Hugging Face configs (Gemma 2: local, global, local, ...; Gemma 3:
    five local, then one global). A local layer caches at most ``window`` tokens.

    Book: chapter "After GQA and MLA".
    """

    name: str  # key of LAYER_LAYOUTS
    title: str  # "Gemma 3"
    local_per_global: int  # local layers for each global one
    window: int  # keys a query of a local layer sees, itself included
    cite: str  # references.bib key(s)
    source: str  # where the numbers were read

    def __post_init__(self):
        for key in ("local_per_global", "window"):
            object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))
        for key in ("title", "cite", "source"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key).strip():
                raise ValueError(f"{key} must be a non-empty string, got {getattr(self, key)!r}")

    def global_layers(self, num_layers: int) -> int:
        """How many of ``num_layers`` layers are global: ``num_layers // (local_per_global + 1)``."""
        return check_positive_int("num_layers", num_layers) // (self.local_per_global + 1)


_LAYOUTS = (
    LayerLayout(name="gemma-2", title="Gemma 2", local_per_global=1, window=4096, cite="gemma2paper,gemma2",
                source="Gemma 2 arXiv:2408.00118 sec. 2 (local sliding window of 4096 tokens alternating with "
                       "global attention); google/gemma-2-9b config.json sliding_window=4096"),
    LayerLayout(name="gemma-3", title="Gemma 3", local_per_global=5, window=1024, cite="gemma3report",
                source="Gemma 3 arXiv:2503.19786 sec. 2 (5:1 interleaving of local and global layers, local span "
                       "1024 tokens); Gemma 3 configs sliding_window=1024, sliding_window_pattern=6"),
)

#: Read-only mapping from a family name to its :class:`LayerLayout`.
LAYER_LAYOUTS = MappingProxyType({layout.name: layout for layout in _LAYOUTS})
