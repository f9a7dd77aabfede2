"""Gated attention (Qiu et al. 2025, used in Qwen3-Next): a sigmoid gate on the attention output.

Each head's output ``softmax(q k^T / sqrt(d_h)) v`` is multiplied, before the output projection,
by ``sigmoid(x W_theta)``: a gate computed from the current token's own hidden state, one value per
head (headwise) or per output channel (elementwise, Qwen3-Next's form). A head can then return
(almost) nothing for a query by closing its gate, without parking its softmax weight on a sink
token. With a sink whose value is zero the two are the same thing: the sink's weight ``p`` scales
the rest of the output by ``1 - p``, which a headwise gate of ``1 - p`` reproduces exactly.

Book: chapter "Attention sinks and StreamingLLM", section "Gated attention".
"""
from __future__ import annotations

import numpy as np

from .attention import scaled_dot_product_attention


def output_gate(out, gate_logits):
    """``sigmoid(gate_logits) * out``: the gate of gated attention, applied to SDPA's output.

    Parameters
    ----------
    out : ndarray, shape (..., n, d_v)
        Attention output, per head.
    gate_logits : ndarray, shape (..., n, d_v) or (..., n, 1)
        Elementwise gate logits, or one per head and query (headwise).

    Returns
    -------
    ndarray, shape (..., n, d_v)
    """
    out, gate_logits = np.asarray(out, dtype=float), np.asarray(gate_logits, dtype=float)
    if gate_logits.ndim != out.ndim or gate_logits.shape[-1] not in (1, out.shape[-1]) \
            or gate_logits.shape[:-1] != out.shape[:-1]:
        raise ValueError(f"gate_logits must have shape {out.shape[:-1] + (out.shape[-1],)} (elementwise) or "
                         f"{out.shape[:-1] + (1,)} (headwise), got {gate_logits.shape}")
    return out / (1.0 + np.exp(-gate_logits))  # sigmoid(g) * out


def gated_sdpa(q, k, v, gate_logits, mask=None):
    """Scaled dot-product attention followed by the sigmoid output gate.

    Shapes as :func:`mha_kit.scaled_dot_product_attention`; ``gate_logits`` as :func:`output_gate`.
    Returns the gated output ``(..., n, d_v)`` and the (ungated) attention weights ``(..., n, s)``.
    """
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return output_gate(out, gate_logits), weights


def sink_logit_for_weight(weight, n_keys, other_logit=0.0) -> float:
    """The score a sink key needs to take ``weight`` of a softmax row against ``n_keys`` keys of score ``other_logit``.

    ``weight = e^a / (e^a + n_keys e^c)`` solved for ``a``: ``a = c + ln(n_keys) + ln(weight / (1 - weight))``.
    It grows with the log of the context, where a gate closing to ``1 - weight`` needs a fixed logit,
    ``ln((1 - weight) / weight)``.
    """
    if not 0 < weight < 1:
        raise ValueError(f"weight must lie strictly between 0 and 1, got {weight!r}")
    if isinstance(n_keys, bool) or not isinstance(n_keys, (int, np.integer)) or n_keys < 1:
        raise ValueError(f"n_keys must be a positive integer, got {n_keys!r}")
    return float(other_logit + np.log(n_keys) + np.log(weight / (1 - weight)))
