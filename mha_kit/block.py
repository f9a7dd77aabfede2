"""The block around attention: LayerNorm, residual placements, DeepNorm, the SwiGLU width, tying, the norm kernel.

Small numpy versions of what sits around attention in a Transformer layer, for the chapter
"The block around attention": LayerNorm (RMSNorm is :func:`mha_kit.rms_norm`), a toy
attention stack in four residual placements (none, plain residual, pre-norm, post-norm),
DeepNorm's constants, the Llama reference rule for the SwiGLU width, the parameters an untied
output head adds, the Welford statistics a LayerNorm kernel reduces, and one record per model of
how its block is built.

>>> import mha_kit as mk
>>> mk.swiglu_hidden_dim(4096, multiplier=1.3, multiple_of=1024)
14336
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from .attention import softmax
from .counting import dense_decoder_params
from .models import ModelFacts

#: Residual placements :func:`toy_attention_stack` can run.
PLACEMENTS = ("none", "residual", "pre", "post")


def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    """LayerNorm over the last axis: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    The mean and the (biased) variance are taken over the ``d`` features of each row, never over
    the batch (Ba et al. 2016, sec. 3).

    Parameters
    ----------
    x : ndarray, shape (..., d)
    gamma, beta : ndarray, shape (d,), optional
        Learned gain and bias; 1 and 0 if omitted.
    eps : float

    Returns
    -------
    ndarray, shape (..., d)

    Book: chapter "The block around attention".
    """
    x = np.asarray(x, dtype=float)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"layer_norm needs an array with a last axis of at least 1 feature, got shape {x.shape}")
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = x.var(axis=-1, keepdims=True)  # (..., 1)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1.0 if gamma is None else gamma) + (0.0 if beta is None else beta)


def distance_from_rank_one(x):
    """How far the rows of ``x`` are from all being equal: ``||x - 1 mean(x)||_F / ||x||_F``.

    0 when every token carries the same vector (the rank-1 collapse of Dong et al. 2021), about 1
    for independent random rows.

    Parameters
    ----------
    x : ndarray, shape (n, d), n >= 2, not all zeros

    Returns
    -------
    float
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"distance_from_rank_one needs an (n, d) array with n >= 2 rows, got shape {x.shape}")
    norm = np.linalg.norm(x)
    if norm == 0:
        raise ValueError("distance_from_rank_one needs a nonzero array, got all zeros")
    return float(np.linalg.norm(x - x.mean(axis=0, keepdims=True)) / norm)


def toy_attention_stack(x, weights, placement):
    """Run ``x`` (shape ``(n, d)``) through single-head attention layers with one residual placement.

    With ``A(h) = softmax(h W_q (h W_k)^T / sqrt(d)) h W_v`` (no mask, no MLP):

    * ``"none"``:     ``h <- A(h)``, pure attention (Dong et al. 2021);
    * ``"residual"``: ``h <- h + A(h)``;
    * ``"pre"``:      ``h <- h + A(LN(h))`` (pre-norm; the final LN is left to the caller);
    * ``"post"``:     ``h <- LN(h + A(h))`` (post-norm, the 2017 layout).

    Parameters
    ----------
    x : ndarray, shape (n, d)
    weights : sequence of L triples (W_q, W_k, W_v), each ndarray of shape (d, d)
    placement : str
        One of :data:`PLACEMENTS`.

    Returns
    -------
    ndarray, shape (L + 1, n, d)
        The hidden states after each layer, the input first.
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    h = np.asarray(x, dtype=float)
    if h.ndim != 2:
        raise ValueError(f"x must be an (n, d) array, got shape {h.shape}")
    states = [h]
    for w_q, w_k, w_v in weights:
        inp = layer_norm(h) if placement == "pre" else h
        scores = (inp @ w_q) @ (inp @ w_k).T / np.sqrt(h.shape[1])  # (n, n)
        out = softmax(scores, axis=-1) @ (inp @ w_v)  # (n, d)
        h = {"none": out, "residual": h + out, "pre": h + out, "post": layer_norm(h + out)}[placement]
        states.append(h)
    return np.stack(states)  # (L + 1, n, d)


def deepnorm_constants(layers, stack="decoder"):
    """DeepNorm's ``(alpha, beta)`` for an encoder-only or decoder-only stack of ``layers`` layers.

    DeepNet (Wang et al. 2022, Table 1): ``x_{l+1} = LN(alpha * x_l + G(x_l))``, with the weights
    of the feed-forward network and of the value and output projections initialised with gain
    ``beta``. For an encoder-only (N layers) or decoder-only (M layers) model
    ``alpha = (2N)^(1/4)`` and ``beta = (8N)^(-1/4)``; the encoder-decoder constants differ and
    are not covered here.
    """
    if stack not in ("encoder", "decoder"):
        raise ValueError(f"stack must be 'encoder' or 'decoder' (encoder-decoder constants differ), got {stack!r}")
    if isinstance(layers, bool) or not isinstance(layers, (int, np.integer)) or layers < 1:
        raise ValueError(f"layers must be a positive integer, got {layers!r}")
    return (2 * layers) ** 0.25, (8 * layers) ** -0.25


def swiglu_hidden_dim(d_model, multiplier=None, multiple_of=256):
    """The SwiGLU width of the Llama reference code: ``2/3 * 4d``, times ``multiplier``, rounded up.

    ``hidden = int(2 * 4 * d_model / 3)``; then ``int(multiplier * hidden)`` when a multiplier is
    given (Llama 3's ``ffn_dim_multiplier``); then rounded up to a multiple of ``multiple_of``.
    Three matrices of ``d x 2/3 * 4d`` hold as many parameters as the two of ``d x 4d`` in a
    ReLU or GELU feed-forward (Shazeer 2020, sec. 2; LLaMA sec. 2.2).
    """
    for key, value in (("d_model", d_model), ("multiple_of", multiple_of)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")
    if multiplier is not None and not multiplier > 0:
        raise ValueError(f"multiplier must be None or positive, got {multiplier!r}")
    hidden = int(2 * 4 * d_model / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def swiglu_ffn(x, w_gate, w_up, w_down):
    """The gated feed-forward network of Llama-style blocks: ``(silu(x W_gate) * x W_up) W_down``.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        One row per token; every row goes through the same weights (position-wise).
    w_gate, w_up : ndarray, shape (d, d_ff)
        The gate and up projections (``gate_proj``, ``up_proj``; engines fuse them into one GEMM).
    w_down : ndarray, shape (d_ff, d)
        The down projection back to the model width.

    Returns
    -------
    ndarray, shape (n, d)

    Shazeer 2020, sec. 2: FFN_SwiGLU(x) = (Swish_1(xW) * xV) W_2; Swish_1 is SiLU, x * sigmoid(x).
    Chapter: "The block around attention", the feed-forward section.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"expected x of shape (n, d), got {x.shape}")
    d = x.shape[1]
    if np.shape(w_gate) != np.shape(w_up) or np.ndim(w_gate) != 2 or np.shape(w_gate)[0] != d:
        raise ValueError(f"w_gate and w_up must both be (d, d_ff) with d = {d}, got {np.shape(w_gate)} and {np.shape(w_up)}")
    if np.shape(w_down) != (np.shape(w_gate)[1], d):
        raise ValueError(f"w_down must be (d_ff, d) = {(np.shape(w_gate)[1], d)}, got {np.shape(w_down)}")
    gate = x @ w_gate  # (n, d) @ (d, d_ff) -> (n, d_ff)
    return (gate / (1.0 + np.exp(-gate)) * (x @ w_up)) @ w_down  # (n, d_ff) @ (d_ff, d) -> (n, d)


def untied_head_share(facts):
    """``(V * d, share)``: parameters of an untied output head and their share of the whole model.

    ``facts`` is a :class:`mha_kit.ModelFacts` record that :func:`mha_kit.dense_decoder_params`
    can count (``param_layout == "llama"``, untied). Tying the head to the embedding would
    remove ``V * d`` parameters, ``share`` of the model (Press and Wolf 2017).
    """
    if not isinstance(facts, ModelFacts):
        raise ValueError(f"expected a ModelFacts record (mk.MODEL_FACTS[name]), got {type(facts).__name__}")
    total = dense_decoder_params(facts)  # ValueError for records it cannot count
    head = facts.vocab_size * facts.config.d_model
    return head, head / total


def welford_merge(a, b):
    """Merge two partial statistics ``(count, mean, m2)`` (Chan et al.'s parallel update).

    ``m2`` is the sum of squared deviations from the mean; the variance of the merged set is
    ``m2 / count``. The same combine PyTorch's LayerNorm kernel applies across the lanes of a
    warp and across warps (``cuWelfordCombine``).
    """
    (n_a, mean_a, m2_a), (n_b, mean_b, m2_b) = a, b
    if n_a < 0 or n_b < 0:
        raise ValueError(f"counts must be non-negative, got {n_a} and {n_b}")
    n = n_a + n_b
    if n == 0:
        return 0, 0.0, 0.0
    delta = mean_b - mean_a
    return n, mean_a + delta * n_b / n, m2_a + m2_b + delta * delta * n_a * n_b / n


def row_stats_blocked(row, threads, dtype=np.float32):
    """Mean and variance of one row as a block of ``threads`` threads reduces it.

    Thread ``t`` reads ``row[t::threads]`` and keeps a running Welford ``(count, mean, m2)`` in
    ``dtype``; the partials are then merged pairwise in ``log2(threads)`` rounds, as warp
    shuffles and a shared-memory step do. ``threads`` must be a power of two. Returns
    ``(mean, variance)`` as floats.
    """
    row = np.asarray(row, dtype=dtype)
    if row.ndim != 1:
        raise ValueError(f"row must be one-dimensional, got shape {row.shape}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1 \
            or threads & (threads - 1) or threads > row.size:
        raise ValueError(f"threads must be a power of two no larger than the row ({row.size}), got {threads!r}")
    lanes = row.reshape(-1, threads).T if row.size % threads == 0 else None  # (threads, d / threads)
    if lanes is None:
        raise ValueError(f"the row length ({row.size}) must be a multiple of threads ({threads})")
    count, mean, m2 = np.zeros(threads, dtype), np.zeros(threads, dtype), np.zeros(threads, dtype)
    for step in range(lanes.shape[1]):  # every thread adds one value per step (online Welford)
        value = lanes[:, step]
        count += 1
        delta = value - mean
        mean += delta / count
        m2 += delta * (value - mean)
    partials = list(zip(count, mean, m2))
    while len(partials) > 1:  # tree: lane i takes lane i + half
        half = len(partials) // 2
        partials = [welford_merge(partials[i], partials[i + half]) for i in range(half)]
    n, mean_all, m2_all = partials[0]
    return float(mean_all), float(m2_all / n)


#: How the block of each model is built, beside its shape record in :data:`mha_kit.MODEL_FACTS`.
#: Keys: the preset name. ``norm`` (LayerNorm or RMSNorm), ``placement`` (post, pre, or pre+post
#: around each sublayer), ``ffn`` (activation and matrix count), ``positions``, ``biases``,
#: ``qk_norm``, ``tied`` (embedding shared with the output head), ``dropout`` (pre-training), ``source``.
BLOCK_LAYOUTS: Mapping = MappingProxyType({
    "transformer-base": MappingProxyType(dict(
        norm="LayerNorm", placement="post", ffn="ReLU, 2 matrices", positions="sinusoidal, added",
        biases="FFN", qk_norm=False, tied=True, dropout=0.1,
        source="arXiv:1706.03762 sec. 3.1 (LayerNorm(x + Sublayer(x))), 3.3 (ReLU FFN with b_1, b_2, eq. 2; "
               "the attention projections are written without biases), 3.4 (shared "
               "embedding and pre-softmax matrix), 3.5, 5.4 (P_drop = 0.1)")),
    "gpt2": MappingProxyType(dict(
        norm="LayerNorm", placement="pre", ffn="GELU, 2 matrices", positions="learned, added",
        biases="all", qk_norm=False, tied=True, dropout=0.1,
        source="GPT-2 report sec. 2.3 (norm moved to each sub-block's input, a final norm added); HF GPT2Config "
               "(resid/embd/attn_pdrop 0.1) and GPT2LMHeadModel (lm_head tied to wte)")),
    "llama-3-8b": MappingProxyType(dict(
        norm="RMSNorm", placement="pre", ffn="SwiGLU, 3 matrices", positions="RoPE",
        biases="none", qk_norm=False, tied=False, dropout=0.0,
        source="LLaMA arXiv:2302.13971 sec. 2.2 (pre-normalization with RMSNorm, SwiGLU, RoPE); HF LlamaConfig "
               "(attention_bias False, mlp_bias False, attention_dropout 0.0, tie_word_embeddings False)")),
    "qwen2.5-7b": MappingProxyType(dict(
        norm="RMSNorm", placement="pre", ffn="SwiGLU, 3 matrices", positions="RoPE",
        biases="Q, K, V only", qk_norm=False, tied=False, dropout=0.0,
        source="Qwen arXiv:2309.16609 sec. 2.2 (biases removed except in the QKV layer); Qwen2.5 arXiv:2412.15115 "
               "Table 1 (7B: tie embedding no); HF Qwen2Attention (q/k/v_proj bias=True)")),
    "gemma-2-9b": MappingProxyType(dict(
        norm="RMSNorm", placement="pre+post", ffn="GeGLU, 3 matrices", positions="RoPE",
        biases="none", qk_norm=False, tied=True, dropout=0.0,
        source="Gemma 2 arXiv:2408.00118 sec. 2 (RMSNorm on the input and output of each sub-layer); HF "
               "Gemma2Config (gelu_pytorch_tanh, attention_bias False, attention_dropout 0.0, tie_word_embeddings True)")),
    "qwen3-30b-a3b": MappingProxyType(dict(
        norm="RMSNorm", placement="pre", ffn="SwiGLU experts, 3 matrices each", positions="RoPE",
        biases="none", qk_norm=True, tied=False, dropout=0.0,
        source="Qwen3 arXiv:2505.09388 sec. 2 (QKV bias of Qwen2 removed, QK-Norm added); HF Qwen3MoeAttention "
               "(q_norm, k_norm); Qwen/Qwen3-30B-A3B config.json (tie_word_embeddings false)")),
})
