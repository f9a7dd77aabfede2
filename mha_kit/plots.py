"""Figures for the book: PNG, labelled axes with units, one message per figure.

Every function returns the matplotlib ``Figure`` it drew, so a notebook cell ending with the
call shows it once. ``matplotlib`` is imported here only, so ``import mha_kit`` stays light.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch
import numpy as np

from .config import renamed_keyword

# One palette for the attention variants, used by every figure.
VARIANT_COLORS = {"mha": "#4C72B0", "gqa": "#55A868", "mqa": "#C44E52", "mla": "#8172B2"}


def _figure(width=6.0, height=3.6):
    """A new figure and axes in the book's size."""
    fig, ax = plt.subplots(figsize=(width, height), dpi=100, layout="constrained")
    return fig, ax


# --- What attention costs (chapter "What attention costs") ---

def cost_vs_length(cfg, lengths, intermediate_size=None):
    """Multiply-adds of one layer over a whole sequence against its length, log-log.

    Lines: the projections (``n * P``), the scores and value mix (``2 h n^2 d_h``) and, when
    ``intermediate_size`` is given, a SwiGLU feed-forward (``3 n d d_ff``); a dotted vertical
    line at each :func:`mha_kit.crossover_length`.

    Parameters
    ----------
    cfg : AttentionConfig or LatentAttentionConfig
    lengths : sequence of int
        Sequence lengths ``n`` (x axis).
    intermediate_size : int, optional
        ``d_ff`` of the model's feed-forward block.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "What attention costs".
    """
    from .counting import crossover_length, projection_macs, sequence_attention_macs

    n = np.array(lengths, dtype=float)
    fig, ax = _figure(6.4, 3.8)
    ax.plot(n, [projection_macs(cfg, t) for t in lengths], color="#4C72B0", label="Q, K, V, O projections  (n·P)")
    ax.plot(n, [sequence_attention_macs(cfg, t) for t in lengths], color="#C44E52", label="scores + mix  (2·h·n²·d_h)")
    ax.axvline(crossover_length(cfg), color="#C44E52", linestyle=":", linewidth=1)
    if intermediate_size is not None:
        ffn = [3 * t * cfg.d_model * intermediate_size for t in lengths]
        ax.plot(n, ffn, color="#55A868", label="SwiGLU feed-forward  (3·n·d·d_ff)")
        ax.axvline(crossover_length(cfg, intermediate_size), color="#55A868", linestyle=":", linewidth=1)
    ax.set(xscale="log", yscale="log", xlabel="sequence length n (tokens)",
           ylabel="multiply-adds per layer, whole sequence", title=f"{cfg.name or 'layer'}: where n² takes over")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def roofline_points(gpu, points, fmt="bf16"):
    """A roofline (attainable FLOP/s against arithmetic intensity) with labelled work on it.

    Parameters
    ----------
    gpu : Accelerator
        ``mk.GPUS[name]``: its bandwidth and peak set the two roofs.
    points : mapping of str to (cfg, num_tokens, context_len, batch_size)
        Each is placed at :func:`mha_kit.layer_intensity` on the roof.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "What attention costs".
    """
    from .counting import layer_intensity

    x = np.logspace(-1, 5, 200)
    fig, ax = _figure(6.4, 3.8)
    ax.plot(x, np.minimum(gpu.bf16_flops, x * gpu.hbm_bandwidth) / 1e12, color="black", linewidth=1.5)
    ax.axvline(gpu.ridge_point, color="gray", linestyle=":", linewidth=1)
    ax.annotate(f"ridge {gpu.ridge_point:.0f} FLOP/byte", (gpu.ridge_point, 1.2), fontsize=8, color="gray")
    for k, (label, (cfg, tokens, context, batch)) in enumerate(points.items()):
        i = layer_intensity(cfg, tokens, context, batch, fmt)
        y = min(gpu.bf16_flops, i * gpu.hbm_bandwidth) / 1e12
        ax.plot([i], [y], "o", color=f"C{k}")
        ax.annotate(label, (i, y), textcoords="offset points", xytext=(5, -12), fontsize=8, color=f"C{k}")
    ax.set(xscale="log", yscale="log", xlabel=f"arithmetic intensity (FLOPs per byte of HBM traffic, {fmt})",
           ylabel="attainable TFLOP/s", title=f"{gpu.title}: roofline of one attention layer")
    return fig


def io_vs_sram(n, d, sram_sizes, marks=None, fmt="bf16"):
    """HBM traffic of standard attention and FlashAttention against the SRAM size, log-log.

    Parameters
    ----------
    n, d : int
        Sequence length and head size of one head.
    sram_sizes : sequence of int
        ``M`` in elements (x axis), each at least ``4 d``.
    marks : mapping of str to int, optional
        Labelled vertical lines at given ``M`` (an A100's SRAM, ``d^2``...).

    Returns
    -------
    matplotlib.figure.Figure
        Bytes moved (``fmt`` per element) by Algorithm 0 (flat), Algorithm 1 (falling), and the
        leading term ``12 n^2 d^2 / M`` of Theorem 2's bound.

    Book: chapter "What attention costs".
    """
    from .counting import flash_attention_io, standard_attention_io
    from .units import elements_to_bytes

    m = np.array(sram_sizes, dtype=float)
    mib = lambda elements: elements_to_bytes(int(elements), fmt) / 2**20  # noqa: E731
    fig, ax = _figure(6.4, 3.8)
    ax.plot(m, [mib(standard_attention_io(n, d))] * len(m), color="#4C72B0", label="standard (Algorithm 0)")
    ax.plot(m, [mib(flash_attention_io(n, d, int(s))) for s in sram_sizes], color="#C44E52",
            marker="o", markersize=3, label="FlashAttention (Algorithm 1)")
    ax.plot(m, [mib(12 * n * n * d * d // int(s)) for s in sram_sizes], color="#C44E52", linestyle=":",
            label="12·n²·d²/M")
    for label, size in (marks or {}).items():
        ax.axvline(size, color="gray", linestyle="--", linewidth=1)
        ax.annotate(label, (size, ax.get_ylim()[1]), textcoords="offset points", xytext=(3, -12), fontsize=8, color="gray")
    ax.set(xscale="log", yscale="log", xlabel="fast memory M (elements)", ylabel=f"HBM reads + writes (MiB, {fmt})",
           title=f"One head, n = {n:,}, d = {d}: bytes moved against SRAM size")
    ax.legend(fontsize=8, loc="lower left")
    return fig


# --- Decoding cost and cache size (chapters "Worked example" and "KV-cache calculator") ---

_LINESTYLES = ("-", "--", ":", "-.")  # tell apart configs of the same variant (same colour)


def decode_cost_bars(cfg, context_len, kv_head_counts=None, fmt="bf16"):
    """Attention arithmetic stays flat across MHA, GQA and MQA while the bytes read fall.

    Two panels for one decoded token in one layer with ``context_len`` cached tokens: the
    score and value-mix multiply-adds (linear axis) and the key-value bytes read from the
    cache (log axis), one bar per number of key-value heads.

    Parameters
    ----------
    cfg : AttentionConfig
    context_len : int
        ``s``, tokens in the cache.
    kv_head_counts : sequence of int, optional
        Values of ``h_kv`` to draw; default ``h``, ``cfg.num_kv_heads`` and 1 (MHA, GQA, MQA).
    fmt : str or int
        Cache element type (name or bits).

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Worked example".
    """
    from .counting import attention_macs, kv_bytes_read
    from .units import format_bytes, format_int

    counts = kv_head_counts or sorted({cfg.num_heads, cfg.num_kv_heads, 1}, reverse=True)
    variants = [cfg.with_kv_heads(n) for n in counts]
    labels = [f"{v.variant.upper()}\nh_kv={v.num_kv_heads}" for v in variants]
    colors = [VARIANT_COLORS[v.variant] for v in variants]
    macs = [attention_macs(v, context_len) for v in variants]
    reads = [kv_bytes_read(v, context_len, fmt) for v in variants]
    fig, (ax_macs, ax_bytes) = plt.subplots(1, 2, figsize=(9.0, 3.6), dpi=100, layout="constrained")
    bars = ax_macs.bar(labels, [m / 1e6 for m in macs], color=colors)
    ax_macs.bar_label(bars, labels=[format_int(m) for m in macs], fontsize=8)
    ax_macs.set(ylabel="multiply-adds per token per layer (millions)", title="Attention arithmetic")
    bars = ax_bytes.bar(labels, [b / 2**20 for b in reads], color=colors)
    ax_bytes.bar_label(bars, labels=[format_bytes(b) for b in reads], fontsize=8)
    ax_bytes.set_yscale("log")
    ax_bytes.set_ylim(bottom=min(reads) / 2**20 / 4)  # room under the smallest bar
    ax_bytes.set(ylabel=f"KV bytes read per token per layer\n(MiB, {fmt}, log scale)", title="Key-value bytes read")
    fig.suptitle(f"{cfg.name or 'attention layer'}: one decoded token, s = {format_int(context_len)}")
    return fig


@renamed_keyword("dtype", "fmt")
def cache_vs_context(configs, contexts, fmt="bf16", batch_size=1):
    """KV-cache size of whole models against context length, log-log, coloured by variant.

    Parameters
    ----------
    configs : sequence of AttentionConfig or LatentAttentionConfig
        With ``num_layers`` set: the cache counts every layer.
    contexts : sequence of int
        Context lengths ``s`` in tokens (x axis).
    fmt : str or int
        Cache element type (name or bits).
    batch_size : int
        Sequences held at once.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "KV-cache calculator".
    """
    from .counting import kv_cache_bytes

    configs, contexts = list(configs), list(contexts)
    if not configs or not contexts:
        raise ValueError(f"need at least one config and one context length, got {len(configs)} and {len(contexts)}")
    fig, ax = _figure()
    seen = {}  # variant -> configs drawn so far, to pick a line style
    for cfg in configs:
        style = _LINESTYLES[seen.get(cfg.variant, 0) % len(_LINESTYLES)]
        seen[cfg.variant] = seen.get(cfg.variant, 0) + 1
        gib = [kv_cache_bytes(cfg, s, batch_size, fmt) / 2**30 for s in contexts]
        ax.plot(contexts, gib, style, marker="o", markersize=3, color=VARIANT_COLORS[cfg.variant],
                label=f"{cfg.name} ({cfg.variant.upper()})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="context length s (tokens, log scale)",
           ylabel=f"KV cache, batch {batch_size} (GiB, {fmt}, log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


# --- Heads and the five steps (chapters "From first principles" and "A replayable step-through") ---

_WEIGHT_CMAP = "Blues"  # attention weights, 0 to 1
_VALUE_CMAP = "RdBu_r"  # signed activations, white at 0
_MAX_CELLS = 16  # the step-through writes every number in its cell; wider matrices are unreadable


def _check_head_weights(weights, tokens):
    """Validate ``weights`` of shape (h, n, s) and ``tokens``; return both, tokens defaulted."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or 0 in weights.shape:
        raise ValueError(f"expected weights of shape (h, n, s) = (heads, queries, keys), got {weights.shape}")
    if (weights < 0).any() or not np.allclose(weights.sum(axis=-1), 1.0):
        raise ValueError("expected attention weights: non-negative, each row (one query) summing to one")
    n, s = weights.shape[1:]
    tokens = [f"token {i}" for i in range(s)] if tokens is None else [str(t) for t in tokens]  # 0-based, as in the book
    if len(tokens) != s or n > s:
        raise ValueError(f"expected {s} token labels for {n} queries over {s} keys, got {len(tokens)}")
    return weights, tokens


def _annotate_cells(ax, m, image, fontsize=8):
    """Write each finite entry of ``m`` (rows, cols) in its cell, white on dark colours."""
    for (i, j), value in np.ndenumerate(m):
        if np.isfinite(value):
            red, green, blue, _ = image.cmap(image.norm(value))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=fontsize,
                    color="white" if dark else "black")


def head_weights_heatmaps(weights, tokens=None):
    """One heatmap of attention weights per head: the heads weigh the same tokens differently.

    Parameters
    ----------
    weights : ndarray, shape (h, n, s)
        Softmax weights of each head, rows summing to one (``multi_head_attention``'s second
        output). Query ``i`` is row ``i``; keys are the last ``s`` tokens, queries the last ``n``.
    tokens : sequence of str, length s, optional
        Token labels; default ``token 0``, ``token 1``, ... (0-based, as in the book)

    Returns
    -------
    matplotlib.figure.Figure
        ``h`` heatmap panels and one colorbar.

    Book: chapter "From first principles", step 3.
    """
    weights, tokens = _check_head_weights(weights, tokens)
    h, n, s = weights.shape
    fig, axes = plt.subplots(1, h, figsize=(0.6 + 2.6 * h, 2.9), dpi=100, layout="constrained",
                             squeeze=False, sharey=True)
    for head, ax in enumerate(axes[0]):
        image = ax.imshow(weights[head], cmap=_WEIGHT_CMAP, vmin=0.0, vmax=1.0)
        _annotate_cells(ax, weights[head], image)
        ax.set_xticks(range(s), tokens, fontsize=8)
        ax.set_yticks(range(n), tokens[s - n:], fontsize=8)
        ax.set(title=f"head {head}", xlabel="key token (attended to)")
    axes[0, 0].set_ylabel("query token (attending)")
    fig.colorbar(image, ax=axes[0].tolist(), label="attention weight\n(share of the row, 0 to 1)", shrink=0.9)
    return fig


# --- Masks and positions (chapters "Self-, cross- and masked attention", "Where positions come from") ---

_MASK_CMAP = ListedColormap(["#f2f2f2", "#4C72B0"])  # hidden, may attend


def mask_patterns(masks):
    """One panel per boolean mask: which key each query may attend to.

    Parameters
    ----------
    masks : dict of str -> ndarray of bool, shape (n, s)
        Panel title -> mask (``True`` = may attend). Queries are the last ``n`` positions.

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Self-, cross- and masked attention".
    """
    if not masks:
        raise ValueError("expected at least one mask to draw, got none")
    for title, mask in masks.items():
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.ndim != 2:
            raise ValueError(f"mask {title!r}: expected a boolean (n, s) array, got {mask.dtype} {mask.shape}")
    fig, axes = plt.subplots(1, len(masks), figsize=(0.4 + 2.5 * len(masks), 2.9), dpi=100,
                             layout="constrained", squeeze=False)
    for ax, (title, mask) in zip(axes[0], masks.items()):
        n, s = np.shape(mask)
        ax.imshow(np.asarray(mask, dtype=float), cmap=_MASK_CMAP, vmin=0, vmax=1)
        ax.set_xticks(range(s), [str(j) for j in range(s)], fontsize=7)
        ax.set_yticks(range(n), [str(s - n + i) for i in range(n)], fontsize=7)
        ax.set(title=title, xlabel="key position j")
        ax.set_xticks(np.arange(-0.5, s), minor=True)
        ax.set_yticks(np.arange(-0.5, n), minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
    axes[0, 0].set_ylabel("query position i")
    return fig


def rope_score_maps(q, k, num_positions, base=10000.0):
    """Scores of one query and one key at every pair of positions: RoPE beside added sinusoids.

    Left: ``rope(q, m) . rope(k, n)``, constant along every diagonal (it depends on ``m - n``
    only). Right: ``(q + PE[m]) . (k + PE[n])`` with sinusoidal encodings added, which changes
    along the diagonals (it depends on ``m`` and ``n`` themselves).

    Parameters
    ----------
    q, k : ndarray, shape (r,), ``r`` even
    num_positions : int

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Where positions come from".
    """
    from .positions import rope_scores, sinusoidal_positions

    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    positions = np.arange(num_positions)
    pe = sinusoidal_positions(num_positions, q.size, base)  # (n, r)
    maps = {"RoPE: rotate q and k": rope_scores(q, k, positions, positions, base),
            "sinusoidal: add PE to q and k": (q + pe) @ (k + pe).T}  # (n, r) @ (r, n) -> (n, n)
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), dpi=100, layout="constrained")
    for ax, (title, m) in zip(axes, maps.items()):
        image = ax.imshow(m, cmap="RdBu_r", vmin=-np.abs(m).max(), vmax=np.abs(m).max())
        ax.set(title=title, xlabel="key position n", ylabel="query position m")
        fig.colorbar(image, ax=ax, label="score q . k (unscaled)", shrink=0.85)
    return fig


def rope_score_vs_distance(head_dim, max_distance, offsets=(0, 1000), base=10000.0):
    """RoPE score of a query and a key of all ones against their distance ``m - n``.

    One line per absolute offset ``n`` of the key; the lines coincide (the score depends on the
    distance only), and their envelope falls with distance (RoFormer's long-term decay).

    Returns
    -------
    matplotlib.figure.Figure

    Book: chapter "Where positions come from".
    """
    from .positions import rope_scores

    ones = np.ones(head_dim)
    distance = np.arange(max_distance + 1)
    fig, ax = _figure(6.4, 3.4)
    for offset, style in zip(offsets, ("-", "--", ":", "-.")):
        scores = rope_scores(ones, ones, offset + distance, [offset], base)[:, 0]  # (distance,)
        ax.plot(distance, scores, style, linewidth=1.2, label=f"key at n = {offset:,}")
    ax.set(xlabel="distance m - n (tokens)", ylabel="score q . k, q = k = ones",
           title=f"RoPE, d_h = {head_dim}: the score depends on m - n only")
    ax.legend(fontsize=8)
    return fig


def _check_step_input(x, weights, cfg):
    """Validate the step-through's example; return ``x`` and the four weights as arrays."""
    from .config import AttentionConfig

    if not isinstance(cfg, AttentionConfig) or cfg.num_kv_heads != cfg.num_heads:
        raise ValueError(f"the step-through draws multi-head attention: expected an AttentionConfig "
                         f"with num_kv_heads == num_heads, got {cfg!r}")
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] != cfg.d_model:
        raise ValueError(f"expected x of shape (n, {cfg.d_model}) = (tokens, d_model), got {x.shape}")
    if x.shape[0] > _MAX_CELLS // 2 or cfg.d_model > _MAX_CELLS:
        raise ValueError(f"the step-through writes every number: use at most {_MAX_CELLS // 2} tokens "
                         f"and d_model <= {_MAX_CELLS}, got x of shape {x.shape}")
    weights = tuple(np.asarray(w) for w in weights)
    width = cfg.num_heads * cfg.head_dim  # h * d_h
    expected = ((cfg.d_model, width),) * 3 + ((width, cfg.d_model),)
    if tuple(w.shape for w in weights) != expected:
        raise ValueError(f"expected w_q, w_k, w_v, w_o of shapes {expected} for {cfg!r}, "
                         f"got {tuple(w.shape for w in weights)}")
    return x, weights


def _toy_steps(x, weights, cfg):
    """Every number the five steps show, computed once from the example (see ``step_titles``)."""
    from .attention import merge_heads, multi_head_attention, split_heads
    from .config import AttentionConfig
    from .counting import projection_params_by_matrix

    x, (w_q, w_k, w_v, w_o) = _check_step_input(x, weights, cfg)
    h = cfg.num_heads
    out, attn = multi_head_attention(x, w_q, w_k, w_v, w_o, h)  # (n, d), (h, n, n)
    concat = merge_heads(attn @ split_heads(x @ w_v, h))  # (h, n, n) @ (h, n, d_h) -> (n, h*d_h)
    single = AttentionConfig(d_model=cfg.d_model, num_heads=1)
    params = {1: projection_params_by_matrix(single), h: projection_params_by_matrix(cfg)}
    return dict(cfg=cfg, x=x, q=x @ w_q, k=x @ w_k, v=x @ w_v, attn=attn, concat=concat, out=out,
                params=params)


def _step_texts(steps):
    """``(short name, numbers)`` of each step; a frame's title is both on two lines."""
    cfg, (n, d), attn = steps["cfg"], steps["x"].shape, steps["attn"]
    h, d_h = cfg.num_heads, cfg.head_dim
    first = ", ".join(f"{p:.3f}" for p in attn[0, 0])
    params = sum(steps["params"][h].values())
    return [
        ("Q, K, V", f"x {(n, d)} @ W_Q, W_K, W_V {(d, h * d_h)} -> Q, K, V {(n, h * d_h)}, "
                    f"{h} heads of {d_h}"),
        ("One head", f"head 0: softmax(Q K^T / sqrt({d_h})) V; token 0 weights {first}, sum 1"),
        ("h heads", f"{h} heads of d/h = {d}/{h} = {d_h}, each weighing the tokens its own way"),
        ("Parameters", f"W_Q, W_K, W_V, W_O: {params} parameters for h = 1 and for h = {h}"),
        ("Join", f"concat {steps['concat'].shape} @ W_O {(h * d_h, d)} -> output {steps['out'].shape}, "
                 f"the input's shape"),
    ]


def step_titles(x, weights, cfg):
    """The five frame titles of ``step_through_animation``, for a text description.

    Returns
    -------
    list of str, length 5: ``"Step k of 5: name — numbers"``.
    """
    texts = _step_texts(_toy_steps(x, weights, cfg))
    return [f"Step {k} of 5: {name} — {numbers}" for k, (name, numbers) in enumerate(texts, start=1)]


def _side_by_side(mats):
    """Matrices of shape (n, w_i) side by side with one NaN column between them.

    Returns the image (n, sum w_i + gaps) and the column where each matrix starts.
    """
    parts, starts, col = [], [], 0
    for i, m in enumerate(mats):
        if i:
            parts.append(np.full((m.shape[0], 1), np.nan))  # NaN draws as blank
            col += 1
        parts.append(m)
        starts.append(col)
        col += m.shape[1]
    return np.hstack(parts), starts


def _draw_matrices(ax, mats, names, splits, signed):
    """Heatmap of matrices side by side, every number written in; dashed lines split heads.

    ``splits[i]`` is the head size ``d_h`` of matrix ``i`` (``None``: no head lines).
    """
    image, starts = _side_by_side(mats)
    vmax = np.nanmax(np.abs(image)) if signed else 1.0
    shown = ax.imshow(image, cmap=_VALUE_CMAP if signed else _WEIGHT_CMAP,
                      vmin=-vmax if signed else 0.0, vmax=vmax, aspect="auto")
    _annotate_cells(ax, image, shown, fontsize=7)
    for start, m, d_h in zip(starts, mats, splits):
        for col in range(d_h or m.shape[1], m.shape[1], d_h or 1):
            ax.axvline(start + col - 0.5, color="0.2", linestyle="--", linewidth=1)
    ax.set_xticks([s + (m.shape[1] - 1) / 2 for s, m in zip(starts, mats)], names, fontsize=8)
    ax.set_yticks(range(image.shape[0]), [f"token {i}" for i in range(image.shape[0])], fontsize=8)


def _draw_qkv(ax, steps):
    h = steps["cfg"].num_heads
    mats = [steps["q"], steps["k"], steps["v"]]
    names = [f"{role} {m.shape}" for role, m in zip("QKV", mats)]
    _draw_matrices(ax, mats, names, [m.shape[1] // h for m in mats], signed=True)
    ax.set(xlabel="feature of Q, K, V (dashed lines: one big matrix cut into heads)", ylabel="token")


def _draw_one_head(ax, steps):
    w = steps["attn"][0]  # (n, s)
    s = w.shape[1]
    sums = w.sum(axis=1, keepdims=True)  # (n, 1), each 1
    _draw_matrices(ax, [w, sums], [f"head 0: keys 1-{s}", "row sum"], [None, None], signed=False)
    ax.set(xlabel="key token (weight on each), then the sum of the row", ylabel="query token")


def _draw_heads(ax, steps):
    attn = steps["attn"]  # (h, n, s)
    _draw_matrices(ax, list(attn), [f"head {i}: keys 1-{attn.shape[2]}" for i in range(len(attn))],
                   [None] * len(attn), signed=False)
    ax.set(xlabel="key token, per head (weight on each)", ylabel="query token")


def _draw_params(ax, steps):
    from matplotlib.ticker import MaxNLocator

    params = steps["params"]  # {h: {"q": count, "k": ..., "v": ..., "o": ...}}
    width = 0.8 / len(params)
    for i, (h, counts) in enumerate(params.items()):
        where = np.arange(len(counts)) + (i - (len(params) - 1) / 2) * width
        bars = ax.bar(where, list(counts.values()), width, label=f"h = {h}",
                      color=VARIANT_COLORS["mha"] if i else "0.65")
        ax.bar_label(bars, fontsize=7)
    ax.set_xticks(range(len(counts)), [f"W_{name.upper()}" for name in counts], fontsize=8)
    ax.set(xlabel="projection matrix", ylabel="parameters (count)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.margins(y=0.35)  # room for the bar labels and the legend
    ax.legend(fontsize=7, loc="upper center", ncols=len(params))


def _draw_join(ax, steps):
    concat, out = steps["concat"], steps["out"]
    _draw_matrices(ax, [concat, out], [f"concat {concat.shape}", f"output {out.shape}"],
                   [steps["cfg"].head_dim, None], signed=True)
    ax.set(xlabel="feature (dashed line: head boundary)", ylabel="token")


_STEP_DRAWERS = (_draw_qkv, _draw_one_head, _draw_heads, _draw_params, _draw_join)


def _draw_step(ax, steps, k, wrap=85):
    """Draw step ``k`` (0-based) of the five on a cleared ``ax``, titled with its numbers."""
    import textwrap

    ax.clear()
    _STEP_DRAWERS[k](ax, steps)
    name, numbers = _step_texts(steps)[k]
    ax.set_title(f"Step {k + 1} of 5: {name}\n" + textwrap.fill(numbers, wrap), fontsize=9, loc="left")


def step_through_animation(x, weights, cfg, interval_ms=2500, dpi=90):
    """The five steps of multi-head attention on one example, one frame each.

    Frames: 1 Q, K, V; 2 one head's weights; 3 all heads' weights; 4 parameters for
    ``h = 1`` and ``h``; 5 the concatenation and the output. Render it with
    ``anim.to_jshtml(default_mode="once")`` for a widget with play, step and replay buttons.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Token vectors, at most 8 tokens and ``d <= 16`` (every number is written in its cell).
    weights : AttentionWeights
        ``w_q, w_k, w_v, w_o`` of a multi-head layer of shape ``cfg``.
    cfg : AttentionConfig
        With ``num_kv_heads == num_heads``.
    interval_ms : int
        Milliseconds per frame when playing.
    dpi : int
        Resolution of the frames (the HTML embeds one PNG per frame).

    Returns
    -------
    matplotlib.animation.FuncAnimation
        Five frames; its figure is not registered with pyplot.

    Book: chapter "A replayable step-through diagram".
    """
    from matplotlib.animation import FuncAnimation
    from matplotlib.figure import Figure

    steps = _toy_steps(x, weights, cfg)
    # Outside pyplot, so a notebook shows the widget alone, not also a still of the first frame.
    fig = Figure(figsize=(6.4, 3.6), dpi=dpi, layout="constrained")
    ax = fig.add_subplot()
    return FuncAnimation(fig, lambda k: _draw_step(ax, steps, k), frames=5, interval=interval_ms,
                         repeat=False)


def step_through_panels(x, weights, cfg):
    """The five frames of ``step_through_animation`` as one still figure (for print).

    Returns
    -------
    matplotlib.figure.Figure
        Five panels: step 1 (the widest matrices) across two thirds of the top row, then 2 to 5.

    Book: chapter "A replayable step-through diagram".
    """
    steps = _toy_steps(x, weights, cfg)
    fig, axes = plt.subplot_mosaic([[1, 1, 2], [3, 4, 5]], figsize=(14.0, 6.6), dpi=100, layout="constrained")
    for k in range(5):
        _draw_step(axes[k + 1], steps, k, wrap=110 if k == 0 else 55)
    return fig


# --- Measured decode speed (chapter "Measure it yourself") ---

def _variant_color(label):
    """Colour of a benchmark label: ``"GQA-8"`` -> the GQA colour."""
    return VARIANT_COLORS[label.split("-")[0].lower()]


def _series(rows):
    """``{variant: (contexts, seconds, bytes)}`` from benchmark CSV rows, sorted by context."""
    series = {}
    for r in rows:
        series.setdefault(r["variant"], []).append((int(r["context"]), float(r["median_s"]), float(r["kv_bytes"])))
    return {label: np.array(sorted(points)).T for label, points in series.items()}


def decode_benchmark_lines(rows, bandwidth, read_bandwidth=None):
    """Measured decode steps: time and achieved bandwidth against context, one line per variant.

    Parameters
    ----------
    rows : iterable of mapping
        Rows of ``benchmarks/decode_benchmark.py``'s CSV: ``variant``, ``context`` (tokens),
        ``median_s`` (seconds) and ``kv_bytes`` (bytes read); strings are converted.
    bandwidth : float
        Measured copy bandwidth in bytes/s, drawn as a ceiling of the right panel (dashed).
    read_bandwidth : float, optional
        Measured read-only bandwidth in bytes/s, the ceiling a cache read can reach (dotted).

    Returns
    -------
    matplotlib.figure.Figure
        Left: milliseconds per step (log-log). Right: KV-cache GB/s achieved (1 GB = 1e9 bytes).

    Book: chapter "Measure it yourself".
    """
    fig, (ax_time, ax_rate) = plt.subplots(1, 2, figsize=(9.6, 3.8), dpi=100, layout="constrained")
    for label, (s, seconds, nbytes) in _series(rows).items():
        style = dict(color=_variant_color(label), marker="o", markersize=4, label=label)
        ax_time.plot(s, seconds * 1e3, **style)
        ax_rate.plot(s, nbytes / seconds / 1e9, **style)
    ax_rate.axhline(bandwidth / 1e9, color="black", linestyle="--", linewidth=1,
                    label=f"copy {bandwidth / 1e9:.0f} GB/s")
    if read_bandwidth is not None:
        ax_rate.axhline(read_bandwidth / 1e9, color="black", linestyle=":", linewidth=1.2,
                        label=f"read {read_bandwidth / 1e9:.0f} GB/s")
    top = max(bandwidth, read_bandwidth or 0) / 1e9
    ax_time.set(xscale="log", yscale="log", xlabel="context s (tokens)", ylabel="time per decode step (ms)",
                title="One layer, one new token")
    ax_rate.set(xscale="log", xlabel="context s (tokens)", ylabel="KV cache read (GB/s)",
                ylim=(0, 1.45 * top), title="Achieved bandwidth")  # headroom for the legend
    ax_rate.legend(fontsize=8, loc="upper left", ncol=3)
    return fig


def decode_benchmark_machines(runs, context=32768, title=None):
    """Time per decode step at ``context`` tokens, one group of bars per variant, one bar per machine.

    Parameters
    ----------
    runs : mapping of str to iterable of mapping
        Machine name (or path of one run: NumPy, fused, peer) -> rows of
        ``benchmarks/decode_benchmark.py``'s CSV (see :func:`decode_benchmark_lines`); every run
        must hold ``context``.
    context : int
        Cache length s in tokens.
    title : str, optional
        Default: "The same benchmark on <n> machines".

    Returns
    -------
    matplotlib.figure.Figure
        Milliseconds per step on a log axis, each bar labelled with its value.

    Book: chapter "Measure it yourself".
    """
    times = {name: {r["variant"]: float(r["median_s"]) for r in rows if int(r["context"]) == context}
             for name, rows in runs.items()}
    if not times or any(not t for t in times.values()):
        raise ValueError(f"every run needs rows at context {context}, got {[n for n, t in times.items() if not t]}")
    variants = list(next(iter(times.values())))
    fig, ax = _figure(7.2, 3.6)
    width, hatches = 0.8 / len(times), ("", "//", "..", "xx")
    for i, (name, by_variant) in enumerate(times.items()):
        x = np.arange(len(variants)) + (i - (len(times) - 1) / 2) * width
        bars = ax.bar(x, [by_variant[v] * 1e3 for v in variants], width, hatch=hatches[i % len(hatches)],
                      color=[_variant_color(v) for v in variants], edgecolor="black")
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set(xticks=np.arange(len(variants)), xticklabels=variants, yscale="log",
           ylabel=f"ms per step at {context:,} tokens", title=title or f"The same benchmark on {len(times)} machines")
    ax.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch=hatches[i % len(hatches)], label=name)
                       for i, name in enumerate(times)], fontsize=8)  # one key per machine, not per colour
    return fig
