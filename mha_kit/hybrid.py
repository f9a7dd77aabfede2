"""Cache bytes of one sequence as the context grows, for the layer layouts that stop it growing.

* full attention: every layer caches every token (:func:`mha_kit.kv_cache_bytes`);
* local/global interleaving (:class:`mha_kit.LayerLayout`): local layers cache at most a window;
* linear attention: a layer carries a fixed state of ``h * (d_h * d_h + d_h)`` numbers
  (:mod:`mha_kit.linear_attention`), whatever the context;
* a hybrid: full attention in one layer of every ``attention_every``, linear attention in the rest.

All sizes are bytes for one sequence, all layers. Book: chapter "After GQA and MLA: sparse,
linear and state-space hybrids".
"""
from __future__ import annotations

from .config import AttentionConfig, check_positive_int
from .counting import kv_cache_bytes_per_token
from .models import LayerLayout
from .units import elements_to_bytes


def _check(cfg, context_len):
    if not isinstance(cfg, AttentionConfig):
        raise ValueError(f"expected an AttentionConfig (MHA, GQA or MQA), got {type(cfg).__name__}")
    return check_positive_int("context_len", context_len)


def layout_kv_bytes(cfg, context_len, layout, fmt="bf16") -> int:
    """Cache of one sequence when ``cfg``'s layers follow ``layout``: global layers keep every token.

    ``layout.global_layers(L)`` layers cache ``s`` tokens, the other ``L - that`` cache
    ``min(s, layout.window)``; each cached token costs what one layer of ``cfg`` stores for it.

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    s = _check(cfg, context_len)
    if not isinstance(layout, LayerLayout):
        raise ValueError(f"expected a LayerLayout (mk.LAYER_LAYOUTS[name]), got {type(layout).__name__}")
    per_layer_token = kv_cache_bytes_per_token(cfg, fmt) // cfg.num_layers
    n_global = layout.global_layers(cfg.num_layers)
    return per_layer_token * (n_global * s + (cfg.num_layers - n_global) * min(s, layout.window))


def linear_state_bytes(num_layers, num_heads, head_dim, fmt="fp32") -> int:
    """The recurrent state of linear attention: ``num_layers * num_heads * (d_h * d_h + d_h)`` numbers.

    Each head keeps ``S`` (``d_h x d_h``, feature size = head size as with ``elu(x) + 1``) and
    the normaliser ``z`` (``d_h``). Kept in fp32 by default, as recurrent states usually are.

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    layers, h, d_h = (check_positive_int(k, v) for k, v in (("num_layers", num_layers), ("num_heads", num_heads),
                                                            ("head_dim", head_dim)))
    return elements_to_bytes(layers * h * (d_h * d_h + d_h), fmt)


def hybrid_cache_bytes(cfg, context_len, attention_every, fmt="bf16", state_fmt="fp32") -> int:
    """Cache of a hybrid built on ``cfg``: full attention in one layer of every ``attention_every``.

    ``L // attention_every`` layers keep ``cfg``'s KV cache of ``context_len`` tokens; the others
    are linear-attention layers with ``cfg``'s query heads and head size
    (:func:`linear_state_bytes`). ``attention_every = 1`` is the full-attention model.

    Book: chapter "After GQA and MLA: sparse, linear and state-space hybrids".
    """
    s, every = _check(cfg, context_len), check_positive_int("attention_every", attention_every)
    n_attention = cfg.num_layers // every
    per_layer_token = kv_cache_bytes_per_token(cfg, fmt) // cfg.num_layers
    n_linear = cfg.num_layers - n_attention
    state = linear_state_bytes(n_linear, cfg.num_heads, cfg.head_dim, state_fmt) if n_linear else 0
    return n_attention * per_layer_token * s + state
