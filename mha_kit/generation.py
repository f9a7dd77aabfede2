"""A whole generation, counted: FLOPs and bytes of writing ``T`` tokens after a ``P``-token prompt.

Two ways to generate. **With a KV cache**, one forward pass over the prompt (prefill) gives the
first token, and each later token costs one forward pass of one token that attends to the cached
keys and values: ``P + T - 1`` positions go through the model once each. **Without a cache**, every
new token reruns the whole sequence so far: ``T`` forward passes over ``P, P + 1, ..., P + T - 1``
tokens. The per-token work (projections, MLP) is linear in the positions processed, so it grows
with the length in the first case and with its square in the second; the causal attention is
quadratic in the first case and cubic in the second.

Counts follow :func:`mha_kit.prefill_flops`: per layer and position ``2 (P_attn + 3 d d_ff)``
FLOPs of matrix products; ``4 h d_h`` FLOPs per key a query attends to (scores and value mix,
causal: position ``i`` sees ``i`` keys, itself included); ``2 V d`` for the logits of each
generated token. Norms and the embedding lookup are left out.

Book: chapter "The KV cache from zero".
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import check_positive_int
from .counting import dense_decoder_params, kv_cache_bytes_per_token, projection_params
from .models import MODEL_FACTS, ModelFacts
from .units import elements_to_bytes


def _dense_facts(model) -> ModelFacts:
    """The :class:`ModelFacts` of a dense Llama-layout model from a preset name or a record."""
    facts = MODEL_FACTS.get(model) if isinstance(model, str) else model
    if not isinstance(facts, ModelFacts) or facts.param_layout != "llama":
        raise ValueError(f"expected a preset name or ModelFacts record with param_layout 'llama' "
                         f"(e.g. 'llama-3-8b'), got {model!r}")
    return facts


def _flop_rates(facts):
    """``(linear, per_key, logits)``: FLOPs per position, per query-key pair, per generated token."""
    cfg = facts.config
    linear = 2 * cfg.num_layers * (projection_params(cfg) + 3 * cfg.d_model * facts.intermediate_size)
    per_key = 4 * cfg.num_layers * cfg.num_heads * cfg.head_dim  # scores + value mix, all layers
    return linear, per_key, 2 * facts.vocab_size * cfg.d_model


def generation_flops(model, prompt_len, new_tokens, cached=True) -> int:
    """FLOPs of generating ``new_tokens`` tokens after a ``prompt_len``-token prompt, whole model.

    With ``N = P + T - 1`` (the last position that goes through the model), ``L`` the linear FLOPs
    per position and ``A`` the attention FLOPs per query-key pair:

    * ``cached=True``: ``L N + A N (N + 1) / 2 + T * 2 V d``: every position once.
    * ``cached=False``: ``sum over n = P..N of (L n + A n (n + 1) / 2) + T * 2 V d``: a full causal
      pass over ``n`` tokens for each new token, the logits of its last position only.

    Parameters
    ----------
    model : str or ModelFacts
        A dense decoder with ``param_layout == "llama"`` (``"llama-3-8b"``, ``mk.MODEL_FACTS[name]``).
    prompt_len, new_tokens : int
        ``P`` and ``T``; ``T = 1`` is a prefill alone, identical with and without a cache.
    cached : bool

    Returns
    -------
    int
        Exact FLOPs.

    Book: chapter "The KV cache from zero".
    """
    facts = _dense_facts(model)
    p, t = check_positive_int("prompt_len", prompt_len), check_positive_int("new_tokens", new_tokens)
    linear, per_key, logits = _flop_rates(facts)
    n = p + t - 1
    if cached:
        return linear * n + per_key * n * (n + 1) // 2 + t * logits
    positions = (n * (n + 1) - (p - 1) * p) // 2  # sum of n over the T passes
    pairs = (n * (n + 1) * (n + 2) - (p - 1) * p * (p + 1)) // 6  # sum of n (n + 1) / 2
    return linear * positions + per_key * pairs + t * logits


@dataclass(frozen=True)
class GenerationBytes:
    """Bytes one sequence moves through HBM over a cached generation (batch 1).

    Book: chapter "The KV cache from zero".
    """

    weights_read: int  # every weight but the input embeddings once per pass: T passes (prefill + T - 1 decodes)
    cache_read: int  # each decode step reads the keys and values of every earlier position
    cache_written: int  # keys and values of the P + T - 1 positions that go through the model


def generation_bytes(model, prompt_len, new_tokens, fmt="bf16") -> GenerationBytes:
    """Cumulative HBM traffic of a cached generation of ``new_tokens`` after ``prompt_len`` tokens.

    One sequence alone: the weights (:func:`mha_kit.dense_decoder_params`, in ``fmt``) less the
    input embedding table, of which a pass reads only the rows of its own tokens, are read once per
    forward pass, ``T`` times (the untied output head is read in full: every logit needs it); decode step ``k = 1 .. T - 1`` reads the cache of the
    ``P + k - 1`` positions before it, ``c (T - 1) P + c (T - 1)(T - 2) / 2`` bytes in all for
    ``c`` bytes of cache per token (:func:`mha_kit.kv_cache_bytes_per_token`); ``P + T - 1``
    positions are written once. Activations are left out. In a batch of ``B`` sequences the
    weights are read once per step for all of them, so their share falls by ``B``.

    Book: chapter "The KV cache from zero".
    """
    facts = _dense_facts(model)
    p, t = check_positive_int("prompt_len", prompt_len), check_positive_int("new_tokens", new_tokens)
    per_token = kv_cache_bytes_per_token(facts.config, fmt)
    embedding_rows = facts.vocab_size * facts.config.d_model  # looked up by row, not streamed
    weights = elements_to_bytes(dense_decoder_params(facts) - embedding_rows, fmt)
    read_tokens = (t - 1) * p + (t - 1) * (t - 2) // 2  # sum over k = 1..T-1 of (P + k - 1)
    return GenerationBytes(weights_read=t * weights, cache_read=read_tokens * per_token,
                           cache_written=(p + t - 1) * per_token)
