"""Weight quantization for serving: integer grids with scales, GPTQ, AWQ, SmoothQuant and FP4/FP8 blocks.

A weight matrix ``w`` has shape ``(d_out, d_in)``, as a linear layer ``y = x @ w.T`` stores it;
groups run along the input dimension (the dimension a dot product sums over), which is how GPTQ and
AWQ group their scales (``group_size=128``). Integer grids:

* symmetric, ``bits`` b: codes ``-(2**(b-1) - 1) .. 2**(b-1) - 1``, ``scale = clip * amax / (2**(b-1) - 1)``,
  zero point 0, so 0.0 stays exact;
* asymmetric: codes ``0 .. 2**b - 1``, ``scale = clip * (max - min) / (2**b - 1)`` over a range
  stretched to hold 0, ``zero = round(-min / scale)``, ``w ~ scale * (code - zero)`` (the form of
  GPTQ's reference ``quant.py``).

Everything is float64 numpy (1.25 features only, no ``ml_dtypes``), so the browser edition runs it.

Book: chapter "Weight quantization for serving".
"""
from __future__ import annotations

import numbers

import numpy as np

from .config import check_positive_int

#: Minifloat element formats as ``(exponent bits, mantissa bits, largest finite value)``: FP8 E4M3 (OCP,
#: no infinities, max 448) and FP4 E2M1 (OCP MX, values 0, 0.5, 1, 1.5, 2, 3, 4, 6).
MINIFLOATS = {"e4m3": (4, 3, 448.0), "e2m1": (2, 1, 6.0)}

#: Block formats as ``(element format, block size, scale format)``: OCP MXFP4 (32 elements, a
#: power-of-two E8M0 scale), NVIDIA NVFP4 (16 elements, an E4M3 scale).
FP4_BLOCKS = {"mxfp4": ("e2m1", 32, "e8m0"), "nvfp4": ("e2m1", 16, "e4m3")}


def _check_bits(bits):
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or not 2 <= bits <= 8:
        raise ValueError(f"bits must be an integer from 2 to 8, got {bits!r}")
    return int(bits)


def _groups(w, group_size):
    """``w`` as ``(d_out, n_groups, g)``: one row of the last axis per scale."""
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or w.size == 0 or not np.isfinite(w).all():
        raise ValueError(f"w must be a finite (d_out, d_in) matrix, got shape {w.shape}")
    if group_size == "tensor":
        return w.reshape(1, 1, -1)  # (1, 1, d_out * d_in): one scale for all
    if group_size is None:
        return w[:, None, :]  # (d_out, 1, d_in): one scale per output channel
    if isinstance(group_size, bool) or not isinstance(group_size, numbers.Integral) or group_size < 1 \
            or w.shape[1] % group_size:
        raise ValueError(f"group_size must be 'tensor', None (per channel) or a positive divisor of "
                         f"d_in ({w.shape[1]}), got {group_size!r}")
    return w.reshape(w.shape[0], -1, int(group_size))  # (d_out, d_in / g, g)


def quantize_weights(w, bits, group_size=128, symmetric=True, clip=1.0):
    """Round ``w`` to a ``bits``-bit integer grid with one scale (and zero point) per group.

    Parameters
    ----------
    w : ndarray, shape (d_out, d_in)
    bits : int, 2 to 8
    group_size : int, None or "tensor"
        Input columns per scale; ``None``: one scale per output channel (row); ``"tensor"``: one scale.
    symmetric : bool
        Symmetric codes around 0 (zero point 0), or an asymmetric min-max grid with a zero point.
    clip : float in (0, 1]
        Fraction of the range the grid covers; values beyond it saturate.

    Returns
    -------
    codes : ndarray of int32, shape (d_out, n_groups, g)
    scale, zero : ndarray of float64, shape (d_out, n_groups, 1)
        ``w ~ scale * (codes - zero)`` (:func:`dequantize_weights`).

    Book: chapter "Weight quantization for serving".
    """
    b, x = _check_bits(bits), _groups(w, group_size)
    if not 0 < clip <= 1:
        raise ValueError(f"clip must lie in (0, 1], got {clip!r}")
    if symmetric:
        top = 2 ** (b - 1) - 1
        amax = clip * np.abs(x).max(axis=-1, keepdims=True)
        scale, zero, lo, hi = np.where(amax > 0, amax / top, 1.0), np.zeros_like(amax), -top, top
    else:
        lo, hi = 0, 2**b - 1
        xmin, xmax = clip * np.minimum(x.min(-1, keepdims=True), 0), clip * np.maximum(x.max(-1, keepdims=True), 0)
        scale = np.where(xmax > xmin, (xmax - xmin) / hi, 1.0)
        zero = np.rint(-xmin / scale)
    codes = np.clip(np.rint(x / scale) + zero, lo, hi).astype(np.int32)
    return codes, scale, zero


def dequantize_weights(codes, scale, zero, shape):
    """``scale * (codes - zero)`` back in the matrix's ``shape`` (d_out, d_in)."""
    return (scale * (codes - zero)).reshape(shape)


def fake_quantize(w, bits, group_size=128, symmetric=True, clip=1.0):
    """Quantize and dequantize: the weights a quantized model computes with, shape of ``w``."""
    return dequantize_weights(*quantize_weights(w, bits, group_size, symmetric, clip), np.shape(w))


def bits_per_weight(bits, block_size, scale_bits=16, zero_bits=0) -> float:
    """Stored bits per weight: the code plus its share of a scale (and zero point) per block.

    ``bits_per_weight(4, 32, 8) == 4.25`` (MXFP4), ``bits_per_weight(4, 128, 16, 16) == 4.25``
    (an int4 grid with fp16 scale and zero per 128 weights).
    """
    bits, block_size = check_positive_int("bits", bits), check_positive_int("block_size", block_size)
    if scale_bits < 0 or zero_bits < 0:
        raise ValueError(f"scale_bits and zero_bits must be >= 0, got {scale_bits} and {zero_bits}")
    return bits + (scale_bits + zero_bits) / block_size


def round_minifloat(x, fmt):
    """Round to the nearest value of a minifloat of :data:`MINIFLOATS` (ties to even), saturating.

    Normal numbers keep ``m`` mantissa bits; below the smallest normal ``2**(1 - bias)`` the step
    stays that of the smallest binade (subnormals). Magnitudes beyond the largest value clip to it.

    Book: chapter "Weight quantization for serving".
    """
    if fmt not in MINIFLOATS:
        raise ValueError(f"fmt must be one of {sorted(MINIFLOATS)}, got {fmt!r}")
    e_bits, m_bits, top = MINIFLOATS[fmt]
    x = np.asarray(x, dtype=np.float64)
    emin = 2 - 2 ** (e_bits - 1)  # exponent of the smallest normal: 1 - bias
    with np.errstate(divide="ignore"):
        e = np.maximum(np.floor(np.log2(np.abs(x))), emin)
    step = 2.0 ** (e - m_bits)
    return np.clip(np.rint(x / step) * step, -top, top)


def quantize_fp4_blocks(x, fmt):
    """MXFP4 or NVFP4 round trip of ``x`` (last axis split in blocks): the values a kernel multiplies.

    MXFP4 (OCP MX v1.0, sec. 6.3): scale ``2**(floor(log2 amax) - 2)``, a power of two (E8M0), the
    elements E2M1 (largest 6 = 1.5 * 2**2), values above 6 * scale clip. NVFP4: scale
    ``amax / 6`` rounded to E4M3 (the per-tensor FP32 scale of the format is left at 1).

    Parameters
    ----------
    x : ndarray, shape (..., n) with n a multiple of the block size (32 or 16)
    fmt : {"mxfp4", "nvfp4"}

    Returns
    -------
    ndarray of float64, shape of ``x``

    Book: chapter "Weight quantization for serving".
    """
    if fmt not in FP4_BLOCKS:
        raise ValueError(f"fmt must be one of {sorted(FP4_BLOCKS)}, got {fmt!r}")
    _, block, _ = FP4_BLOCKS[fmt]
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] % block or not np.isfinite(x).all():
        raise ValueError(f"{fmt} needs finite values with a last axis that is a multiple of {block}, got {x.shape}")
    xb = x.reshape(*x.shape[:-1], -1, block)  # (..., n / block, block)
    amax = np.abs(xb).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        if fmt == "mxfp4":
            scale = np.where(amax > 0, 2.0 ** (np.floor(np.log2(amax)) - 2), 1.0)
        else:
            scale = np.where(amax > 0, round_minifloat(amax / 6.0, "e4m3"), 1.0)
    return (round_minifloat(xb / scale, "e2m1") * scale).reshape(x.shape)


def awq_search(w, x, bits, group_size=128, grid=20):
    """AWQ's per-input-channel scale search: ``s = mean|x|**alpha``, best ``alpha`` on a grid.

    The layer is computed as ``(x / s) @ Q(w * s).T``; the scale protects the channels whose
    activations are large. ``s`` is normalised by ``sqrt(max(s) * min(s))`` as in AWQ's code.

    Parameters
    ----------
    w : ndarray, shape (d_out, d_in)
    x : ndarray, shape (n_tokens, d_in)
        Calibration activations.
    bits, group_size
        As :func:`quantize_weights` (symmetric grid).
    grid : int
        ``alpha`` takes ``grid`` values ``0, 1/grid, ..., (grid - 1)/grid``; alpha 0 is plain rounding.

    Returns
    -------
    alpha : float
    s : ndarray, shape (d_in,)
    errors : ndarray, shape (grid,)
        Mean squared error of the layer's output for each alpha.

    Book: chapter "Weight quantization for serving".
    """
    w, x = np.asarray(w, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"x must be (n_tokens, d_in) with the d_in of w {w.shape}, got {x.shape}")
    y, mean_abs, errors, scales = x @ w.T, np.abs(x).mean(axis=0), [], []
    for alpha in np.arange(grid) / grid:
        s = np.maximum(mean_abs, 1e-4) ** alpha
        s = s / np.sqrt(s.max() * s.min())
        errors.append(np.mean(((x / s) @ fake_quantize(w * s, bits, group_size).T - y) ** 2))
        scales.append(s)
    best = int(np.argmin(errors))
    return best / grid, scales[best], np.array(errors)


def gptq_quantize(w, x, bits, damp=0.01, symmetric=False):
    """GPTQ on one layer: quantize column by column, pushing each column's error onto the later ones.

    ``H = 2 x.T x`` (plus ``damp`` times its mean diagonal), ``U`` the upper Cholesky factor of
    ``H**-1``; after rounding column ``i``, ``err = (w_i - q_i) / U[i, i]`` and
    ``w[:, i+1:] -= err * U[i, i+1:]`` (Frantar et al. 2022, Algorithm 1, one block). The grid is
    one scale per output channel, set from the original row as GPTQ's reference does.

    Parameters
    ----------
    w : ndarray, shape (d_out, d_in)
    x : ndarray, shape (n_tokens, d_in)
        Calibration activations; ``n_tokens >= 1``.
    bits : int
    damp : float
        Fraction of the mean diagonal of ``H`` added to it (GPTQ's ``percdamp``, 0.01).

    Returns
    -------
    ndarray, shape (d_out, d_in): the quantized (dequantized) weights.

    Book: chapter "Weight quantization for serving".
    """
    w, x = np.array(w, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1] or damp <= 0:
        raise ValueError(f"x must be (n_tokens, d_in) with the d_in of w {w.shape} and damp > 0, "
                         f"got {x.shape} and damp={damp!r}")
    _, scale, zero = quantize_weights(w, bits, None, symmetric)  # (d_out, 1, 1) each
    scale, zero = scale[:, 0, 0], zero[:, 0, 0]  # (d_out,)
    top, bottom = (2 ** (bits - 1) - 1, -(2 ** (bits - 1) - 1)) if symmetric else (2**bits - 1, 0)
    h = 2 * x.T @ x  # (d_in, d_in)
    h += damp * np.mean(np.diag(h)) * np.eye(len(h))
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper: u.T @ u = h**-1
    q = np.empty_like(w)
    for i in range(w.shape[1]):
        q[:, i] = scale * (np.clip(np.rint(w[:, i] / scale) + zero, bottom, top) - zero)
        err = (w[:, i] - q[:, i]) / u[i, i]
        w[:, i + 1:] -= np.outer(err, u[i, i + 1:])
    return q


def smoothquant_scales(x_absmax, w_absmax, alpha=0.5):
    """SmoothQuant's per-channel factors ``s_j = max|X_j|**alpha / max|W_j|**(1 - alpha)`` (eq. 4).

    The layer becomes ``(X / s) @ (s * W)``: activations divided, the matching weight inputs multiplied.

    Parameters
    ----------
    x_absmax, w_absmax : ndarray, shape (d_in,)
        Largest magnitude of each input channel in the calibration activations and in the weights.
    alpha : float in [0, 1]
        Migration strength: 0 leaves the activations alone, 1 moves all their range into the weights.

    Book: chapter "Weight quantization for serving".
    """
    xa, wa = np.asarray(x_absmax, dtype=np.float64), np.asarray(w_absmax, dtype=np.float64)
    if xa.shape != wa.shape or xa.ndim != 1 or not ((xa > 0).all() and (wa > 0).all()):
        raise ValueError(f"x_absmax and w_absmax must be positive vectors of one length, got {xa.shape} and {wa.shape}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return xa**alpha / wa ** (1 - alpha)


def weight_step_seconds(params, tokens, weight_bits, bandwidth, flop_rate) -> float:
    """Roofline floor of one forward step over ``tokens`` tokens that reads every weight once.

    ``max(params * weight_bits / 8 / bandwidth, 2 * params * tokens / flop_rate)``: the weights'
    bytes against the matmul FLOPs (attention and the KV cache left out, the chapter says so).

    Book: chapter "Weight quantization for serving".
    """
    params, tokens = check_positive_int("params", params), check_positive_int("tokens", tokens)
    if not (weight_bits > 0 and bandwidth > 0 and flop_rate > 0):
        raise ValueError(f"weight_bits, bandwidth and flop_rate must be positive, got "
                         f"{weight_bits}, {bandwidth}, {flop_rate}")
    return max(params * weight_bits / 8 / bandwidth, 2 * params * tokens / flop_rate)


def compute_bound_tokens(weight_bits, bandwidth, flop_rate) -> float:
    """Tokens per step from which a weight matmul is compute-bound on the roofline.

    The weights' bytes per token, ``weight_bits / 8``, against the 2 FLOPs each weight costs per token:
    ``weight_bits / 8 * flop_rate / (2 * bandwidth)``. For bf16 weights this is the GPU's ridge point.

    Book: chapter "Weight quantization for serving".
    """
    if not (weight_bits > 0 and bandwidth > 0 and flop_rate > 0):
        raise ValueError(f"weight_bits, bandwidth and flop_rate must be positive, got "
                         f"{weight_bits}, {bandwidth}, {flop_rate}")
    return weight_bits / 8 * flop_rate / (2 * bandwidth)


def quantized_loses_tokens(bandwidth, flop_rate, efficiency, base_bits=16) -> float:
    """Tokens per step from which a weight-only kernel is no faster than the ``base_bits`` dense one.

    The quantized kernel multiplies at ``efficiency * flop_rate`` (dequantization steals issue slots,
    ``0 < efficiency <= 1``); the dense kernel at ``flop_rate``. Its compute time ``2 P n / (efficiency F)``
    reaches the dense step ``max(P base_bits / 8 / B, 2 P n / F)`` at
    ``n = efficiency * base_bits / 8 * F / (2 B)``; with ``efficiency == 1`` the two tie from the
    dense ridge on.

    Book: chapter "Weight quantization for serving".
    """
    if not 0 < efficiency <= 1:
        raise ValueError(f"efficiency must lie in (0, 1], got {efficiency!r}")
    return efficiency * compute_bound_tokens(base_bits, bandwidth, flop_rate)


#: ggml block structs (ggml/src/ggml-common.h) as ``(weights per block, ((field, bytes), ...))``;
#: ``QK_K = 256`` weights per K-quant super-block, ``K_SCALE_SIZE = 12``, ``ggml_half`` 2 bytes.
GGML_BLOCKS = {
    "q4_0": (32, (("d", 2), ("qs", 32 // 2))),
    "q8_0": (32, (("d", 2), ("qs", 32))),
    "q2_K": (256, (("scales", 256 // 16), ("qs", 256 // 4), ("d", 2), ("dmin", 2))),
    "q3_K": (256, (("hmask", 256 // 8), ("qs", 256 // 4), ("scales", 12), ("d", 2))),
    "q4_K": (256, (("d", 2), ("dmin", 2), ("scales", 12), ("qs", 256 // 2))),
    "q5_K": (256, (("d", 2), ("dmin", 2), ("scales", 12), ("qh", 256 // 8), ("qs", 256 // 2))),
    "q6_K": (256, (("ql", 256 // 2), ("qh", 256 // 4), ("scales", 256 // 16), ("d", 2))),
}


def ggml_bits_per_weight(fmt) -> float:
    """Stored bits per weight of a ggml quantization type: its block struct's bytes over its weights.

    ``ggml_bits_per_weight("q4_K") == 4.5`` (144 bytes per 256 weights), ``"q6_K"`` gives 6.5625.

    Book: chapter "Weight quantization for serving".
    """
    if fmt not in GGML_BLOCKS:
        raise ValueError(f"fmt must be one of {sorted(GGML_BLOCKS)}, got {fmt!r}")
    weights, fields = GGML_BLOCKS[fmt]
    return 8 * sum(nbytes for _, nbytes in fields) / weights


def sparse24_bits_per_weight(value_bits, index_bits=2) -> float:
    """Stored bits per weight of a 2:4-sparse matrix: half the values, each with its position index.

    Two of every four weights are kept, each with a ``index_bits``-bit index of its place in the four:
    ``(value_bits + index_bits) / 2``. bf16: 9 bits, 0.5625 of dense.

    Book: chapter "Weight quantization for serving".
    """
    value_bits = check_positive_int("value_bits", value_bits)
    if isinstance(index_bits, bool) or not isinstance(index_bits, numbers.Integral) or index_bits < 0:
        raise ValueError(f"index_bits must be an integer >= 0, got {index_bits!r}")
    return (value_bits + index_bits) / 2


#: vLLM's CUDA list for mixed-precision (weight-only and W4A8) linear layers, in its priority order
#: (vllm/model_executor/kernels/linear/__init__.py, _POSSIBLE_KERNELS), simplified to
#: ``(kernel, lowest capability, highest capability or None, weight bits, activations, group sizes or None)``;
#: group size -1 means one scale per output channel. Conch and Exllama (after Marlin) are left out.
VLLM_MP_KERNELS = (
    ("CutlassW4A8LinearKernel", 90, 90, (4,), ("fp8",), (128,)),
    ("MacheteLinearKernel", 90, 90, (4, 8), ("bf16", "fp16"), None),
    ("AllSparkLinearKernel", 80, 89, (8,), ("bf16", "fp16"), (-1,)),
    ("MarlinLinearKernel", 75, None, (4, 8), ("bf16", "fp16", "fp8", "int8"), (-1, 32, 64, 128)),
)


def choose_mp_kernel(capability, weight_bits, act="bf16", group_size=128) -> str:
    """The first kernel of :data:`VLLM_MP_KERNELS` whose capability range and format fit, as
    vLLM's ``choose_mp_linear_kernel`` walks its list (capability 90 is Hopper, 100 Blackwell, 80 A100).

    Book: chapter "Weight quantization for serving".
    """
    capability = check_positive_int("capability", capability)
    for name, low, high, bits, acts, groups in VLLM_MP_KERNELS:
        if low <= capability and (high is None or capability <= high) and weight_bits in bits \
                and act in acts and (groups is None or group_size in groups):
            return name
    raise ValueError(f"no kernel in the list implements capability {capability}, weight_bits {weight_bits}, "
                     f"act {act!r}, group_size {group_size}")


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def flip_rate(logits_ref, logits_test) -> float:
    """Fraction of positions whose top token (argmax) differs between two models.

    Dutta et al. 2024 ("Accuracy is Not All You Need", arXiv:2407.09141 §3) count a flip when a
    compressed model's answer differs from the baseline's; over next-token predictions that is a
    changed argmax.

    Parameters
    ----------
    logits_ref, logits_test : array_like, shape (n, vocab)
        Logits of the baseline (e.g. bf16) and of the compressed model at the same n positions.
    """
    a, b = np.asarray(logits_ref, dtype=float), np.asarray(logits_test, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"logits must both be (n, vocab) and equal; got {a.shape} and {b.shape}")
    return float(np.mean(a.argmax(axis=1) != b.argmax(axis=1)))


def kl_divergence(logits_ref, logits_test) -> float:
    """Mean KL(p_ref || p_test) in nats over positions, from two models' logits.

    The distance llama.cpp's ``llama-perplexity --kl-divergence`` reports and that Dutta et al.
    2024 (§4) find correlated with flips.

    Parameters
    ----------
    logits_ref, logits_test : array_like, shape (n, vocab)
    """
    a, b = np.asarray(logits_ref, dtype=float), np.asarray(logits_test, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"logits must both be (n, vocab) and equal; got {a.shape} and {b.shape}")
    lp, lq = _log_softmax(a), _log_softmax(b)
    return float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))


def ternary_quantize(w, eps=1e-6):
    """BitNet b1.58's absmean quantization: codes in {-1, 0, +1} and one scale per matrix.

    ``gamma = mean|W|``; ``codes = RoundClip(W / (gamma + eps), -1, 1)`` (Ma et al. 2024,
    arXiv:2402.17764 §2, eq. 1-3). The weights are ``gamma * codes``.

    Parameters
    ----------
    w : array_like, shape (d_out, d_in)

    Returns
    -------
    codes : ndarray of int8, shape (d_out, d_in)
    gamma : float
    """
    w = np.asarray(w, dtype=float)
    if w.ndim != 2 or w.size == 0:
        raise ValueError(f"w must be a non-empty (d_out, d_in) matrix; got shape {w.shape}")
    gamma = float(np.mean(np.abs(w)))
    codes = np.clip(np.round(w / (gamma + eps)), -1, 1).astype(np.int8)
    return codes, gamma


def ternary_matvec(codes, gamma, x):
    """``gamma * codes @ x`` with additions and subtractions only, then one multiply per output.

    Each output sums the inputs whose code is +1 and subtracts those whose code is -1; zeros are
    skipped (BitNet b1.58, arXiv:2402.17764 §1, Fig. 1).

    Parameters
    ----------
    codes : array_like of {-1, 0, 1}, shape (d_out, d_in)
    gamma : float
    x : array_like, shape (d_in,)

    Returns
    -------
    ndarray, shape (d_out,)
    """
    codes, x = np.asarray(codes), np.asarray(x, dtype=float)
    if not np.isin(codes, (-1, 0, 1)).all():
        raise ValueError("codes must be ternary: every entry in {-1, 0, 1}")
    if codes.ndim != 2 or x.shape != (codes.shape[1],):
        raise ValueError(f"x must be (d_in,) = ({codes.shape[-1]},) for codes {codes.shape}; got {x.shape}")
    plus = np.where(codes == 1, x, 0.0).sum(axis=1)  # (d_out,)
    minus = np.where(codes == -1, x, 0.0).sum(axis=1)  # (d_out,)
    return gamma * (plus - minus)
