"""Stretching RoPE past its training length: the frequencies of a model config's ``rope_scaling``.

RoPE turns pair ``i`` of a query or key by ``position * theta_i`` with ``theta_i = base**(-2i/r)``
(chapter "Where positions come from"). A model trained on ``L`` tokens has seen pair ``i`` turn
through at most ``L * theta_i`` radians. Reading ``s`` times further produces angles no training
step produced, for the slow pairs whose wavelength ``2 pi / theta_i`` exceeds ``L``. Each scheme
below divides some frequencies by up to ``s`` so that the angles stay in the trained range:

* ``"linear"`` (position interpolation, Chen et al. 2023): every pair, by ``factor``;
* ``"dynamic"`` (NTK-aware base change, bloc97 2023, recomputed for the current length): the
  base grows so the slowest pair slows by about the needed ratio and the fastest not at all;
* ``"yarn"`` (Peng et al. 2023): fast pairs untouched, slow pairs divided by ``factor``, a linear
  ramp between them, plus an attention temperature;
* ``"llama3"`` (Llama 3.1): the same three bands, cut by wavelength against the original context.

:func:`rope_inv_freq` reads the ``rope_scaling`` dictionary of a Hugging Face model config and
follows the conventions of transformers' ``ROPE_INIT_FUNCTIONS``.

Book: chapter "Stretching RoPE".
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

from .config import check_positive_int
from .positions import _check_base

#: The ``rope_type`` values :func:`rope_inv_freq` understands.
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")


def _base_inv_freq(r, base):
    """``base**(-2i / r)`` for ``i = 0 .. r/2 - 1``: the unscaled frequencies, shape ``(r/2,)``."""
    return base ** (-np.arange(0, r, 2) / r)


def _number(params, key, rope_type, default=None, minimum=None):
    """``params[key]`` as a finite float (``default`` when absent), or a ``ValueError``."""
    value = params.get(key)
    value = default if value is None else value
    if value is None:
        raise ValueError(f"rope_scaling of rope_type {rope_type!r} needs {key!r}, got keys {sorted(params)}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"rope_scaling[{key!r}] must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"rope_scaling[{key!r}] must be at least {minimum}, got {value}")
    return float(value)


def _trained_length(params, rope_type, max_position_embeddings, key="original_max_position_embeddings"):
    """The context the model was trained at: ``params[key]`` or the config's ``max_position_embeddings``."""
    length = params.get(key, max_position_embeddings)
    if length is None:
        raise ValueError(f"rope_type {rope_type!r} needs the trained context length: give "
                         f"rope_scaling[{key!r}] or max_position_embeddings")
    return check_positive_int(key, length)


def _linear(r, base, params, seq_len, max_position_embeddings):
    # Position interpolation: position m is read as m / factor, i.e. every frequency divided by factor.
    return _base_inv_freq(r, base) / _number(params, "factor", "linear", minimum=1.0), 1.0


def _dynamic(r, base, params, seq_len, max_position_embeddings):
    # NTK-aware: a larger base slows the slow pairs most; "dynamic" sets it from the current length.
    factor = _number(params, "factor", "dynamic", minimum=1.0)
    if max_position_embeddings is None:
        raise ValueError("rope_type 'dynamic' needs max_position_embeddings (the config's trained length)")
    trained = check_positive_int("max_position_embeddings", max_position_embeddings)
    if r < 4:
        raise ValueError(f"rope_type 'dynamic' needs head_dim >= 4 (the base exponent is r / (r - 2)), got {r}")
    length = trained if seq_len is None else max(check_positive_int("seq_len", seq_len), trained)
    scaled_base = base * (factor * length / trained - (factor - 1)) ** (r / (r - 2))
    return _base_inv_freq(r, scaled_base), 1.0


def yarn_mscale(factor, mscale=1.0):
    """YaRN's magnitude factor ``0.1 * mscale * ln(factor) + 1``, and 1 for ``factor <= 1``.

    With ``mscale=1`` it is YaRN's ``sqrt(1/t)`` (Peng et al. 2023, sec. 3.4): cos and sin are
    multiplied by it, so every score by its square. DeepSeek-V2 writes ``sqrt(t) = 0.0707 ln s + 1``,
    i.e. ``mscale=0.707``, and multiplies its softmax scale by the square instead.

    Book: chapter "Stretching RoPE".
    """
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not math.isfinite(factor) or factor <= 0:
        raise ValueError(f"factor must be a positive finite number, got {factor!r}")
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _yarn_ramp(r, base, trained, beta_fast, beta_slow, truncate):
    """Per pair: 0 for pairs kept as trained, 1 for pairs divided by the factor, linear between.

    Pair ``i`` turns ``trained / wavelength_i`` times over the trained context; the pair that
    turns exactly ``rot`` times sits at ``r * ln(trained / (2 pi rot)) / (2 ln base)``. The
    ramp runs, linearly in the pair index, from the pair of ``beta_fast`` turns to the pair
    of ``beta_slow`` turns (the code's convention; the paper ramps linearly in turns).
    """
    def pair_with(rotations):
        return r * math.log(trained / (2 * math.pi * rotations)) / (2 * math.log(base))

    low, high = pair_with(beta_fast), pair_with(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, r - 1)
    span = high - low if high != low else 0.001  # transformers' guard against a zero-width ramp
    return np.clip((np.arange(r // 2) - low) / span, 0.0, 1.0)


def _yarn(r, base, params, seq_len, max_position_embeddings):
    factor = _number(params, "factor", "yarn", minimum=1.0)
    trained = _trained_length(params, "yarn", max_position_embeddings)
    beta_fast = _number(params, "beta_fast", "yarn", default=32.0) or 32.0  # transformers: absent, None or 0 -> 32
    beta_slow = _number(params, "beta_slow", "yarn", default=1.0) or 1.0
    truncate = params.get("truncate", True)
    if not isinstance(truncate, bool):
        raise ValueError(f"rope_scaling['truncate'] must be True or False, got {truncate!r}")
    ramp = _yarn_ramp(r, base, trained, beta_fast, beta_slow, truncate)
    theta = _base_inv_freq(r, base)
    inv_freq = theta * (1 - ramp) + theta / factor * ramp  # (r/2,)
    if params.get("attention_factor") is not None:
        return inv_freq, _number(params, "attention_factor", "yarn", minimum=0.0)
    mscale, mscale_all_dim = params.get("mscale"), params.get("mscale_all_dim")
    if mscale and mscale_all_dim:  # DeepSeek's form: a ratio, often 1, with the temperature moved elsewhere
        return inv_freq, yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim)
    return inv_freq, yarn_mscale(factor)


def _llama3(r, base, params, seq_len, max_position_embeddings):
    factor = _number(params, "factor", "llama3", minimum=1.0)
    low = _number(params, "low_freq_factor", "llama3")
    high = _number(params, "high_freq_factor", "llama3")
    if not 0 < low < high:
        raise ValueError(f"llama3 scaling needs 0 < low_freq_factor < high_freq_factor, got {low} and {high}")
    trained = _trained_length(params, "llama3", max_position_embeddings)
    theta = _base_inv_freq(r, base)
    wavelength = 2 * math.pi / theta  # tokens per turn of each pair
    # smooth = 1 below trained / high tokens (kept), 0 above trained / low (divided by factor)
    smooth = np.clip((trained / wavelength - low) / (high - low), 0.0, 1.0)
    return theta * smooth + theta / factor * (1 - smooth), 1.0


_SCALERS = {"default": lambda r, base, *_: (_base_inv_freq(r, base), 1.0), "linear": _linear,
            "dynamic": _dynamic, "yarn": _yarn, "llama3": _llama3}


def rope_type_of(scaling) -> str:
    """The ``rope_type`` of a ``rope_scaling`` dict (legacy key ``"type"`` accepted; ``None`` is default)."""
    if scaling is None:
        return "default"
    if not isinstance(scaling, Mapping):
        raise ValueError(f"rope_scaling must be a dict such as {{'rope_type': 'linear', 'factor': 2.0}} or None, "
                         f"got {type(scaling).__name__}")
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"unknown rope_type {rope_type!r}; supported: {', '.join(ROPE_TYPES)}")
    return rope_type


def rope_inv_freq(head_dim, base=10000.0, scaling=None, *, seq_len=None, max_position_embeddings=None):
    """RoPE frequencies, scaled as a model config's ``rope_scaling`` says, and the attention factor.

    Follows Hugging Face transformers' ``ROPE_INIT_FUNCTIONS``: ``"linear"`` divides every
    frequency by ``factor``; ``"dynamic"`` raises the base to
    ``base * (factor * L' / L - factor + 1)**(r / (r - 2))`` for the current length
    ``L' = max(seq_len, L)``; ``"yarn"`` keeps pairs that turn ``beta_fast`` (32) or more times
    in the trained context, divides by ``factor`` those that turn ``beta_slow`` (1) or fewer
    times, ramps between them, and returns ``0.1 ln(factor) + 1`` (or ``attention_factor``, or
    DeepSeek's ``mscale`` ratio) as the attention factor; ``"llama3"`` keeps pairs of wavelength
    below ``L / high_freq_factor``, divides those above ``L / low_freq_factor``, and blends
    between them by ``L / wavelength``.

    Parameters
    ----------
    head_dim : int
        ``r``, the number of rotated dimensions (``d_h``, or ``d_h^R`` for MLA), even.
    base : float
        The config's ``rope_theta``.
    scaling : dict or None
        The config's ``rope_scaling``: ``{"rope_type": ..., "factor": ..., ...}`` (``"type"`` is
        read as ``"rope_type"``); ``None`` for plain RoPE.
    seq_len : int, optional
        Current sequence length, for ``"dynamic"`` only (default: ``max_position_embeddings``).
    max_position_embeddings : int, optional
        The config's ``max_position_embeddings``: the trained length for ``"dynamic"``, and for
        ``"yarn"`` when ``rope_scaling`` has no ``original_max_position_embeddings``.

    Returns
    -------
    inv_freq : ndarray of float64, shape (r/2,)
        ``theta_i`` after scaling; pass it to :func:`mha_kit.rope`.
    attention_factor : float
        Multiplies cos and sin (so every score by its square); 1 except for YaRN.

    Book: chapter "Stretching RoPE".
    """
    r = check_positive_int("head_dim", head_dim)
    if r % 2:
        raise ValueError(f"head_dim ({r}) must be even: RoPE turns pairs of dimensions")
    rope_type = rope_type_of(scaling)
    params = dict(scaling or {})
    return _SCALERS[rope_type](r, _check_base(base), params, seq_len, max_position_embeddings)


def stretch_per_pair(head_dim, base=10000.0, scaling=None, **lengths):
    """How many times slower each pair turns after scaling: ``theta_i / theta_i'``, shape ``(r/2,)``.

    1 means the pair is used as trained (extrapolation), ``factor`` means fully interpolated.

    Book: chapter "Stretching RoPE" (the figure of which wavelengths each method stretches).
    """
    plain, _ = rope_inv_freq(head_dim, base)
    scaled, _ = rope_inv_freq(head_dim, base, scaling, **lengths)
    return plain / scaled


def vllm_max_model_len(max_position_embeddings, scaling=None, *, model_type="",
                       original_max_position_embeddings=None, tokenizer_max_length=None):
    """The context length vLLM serves by default for a model config (no ``--max-model-len``).

    Follows ``_get_and_verify_max_len`` in vllm/config/model.py: the config's length, capped by the
    tokenizer's ``model_max_length``, is multiplied by ``scaling["factor"]`` unless the type is
    ``"llama3"``, ``"longrope"`` or ``"su"`` (their length already counts the stretch) or the model
    is a Gemma 3; for ``"yarn"`` the length is first replaced by the original one. A LongRoPE model
    defaults to its original length (``original_max_position_embeddings``, a top-level key in
    Phi-3's config), so that short inputs keep the short factors.

    Parameters
    ----------
    max_position_embeddings : int
        The config's ``max_position_embeddings``.
    scaling : dict or None
        The config's ``rope_scaling`` (``rope_type`` or the legacy ``type`` key).
    model_type : str
        The config's ``model_type``; a Gemma 3 type is never scaled again.
    original_max_position_embeddings : int, optional
        The top-level key a LongRoPE config carries; without it the derived length is returned.
    tokenizer_max_length : int, optional
        The tokenizer's ``model_max_length``, which caps the config's length before scaling.

    Returns
    -------
    int
        The ``max_model_len`` a server started without ``--max-model-len`` accepts.

    Raises
    ------
    ValueError
        If a length is not a positive integer, ``scaling`` is not a dict, or a ``yarn`` block has no
        ``original_max_position_embeddings``.

    Book: chapter "Stretching RoPE".
    """
    length = check_positive_int("max_position_embeddings", max_position_embeddings)
    if tokenizer_max_length is not None:
        length = min(length, check_positive_int("tokenizer_max_length", tokenizer_max_length))
    if scaling is not None and not isinstance(scaling, Mapping):
        raise ValueError(f"rope_scaling must be a dict or None, got {type(scaling).__name__}")
    rope_type = "default" if scaling is None else scaling.get("rope_type", scaling.get("type", "default"))
    if rope_type == "longrope":
        return length if original_max_position_embeddings is None else check_positive_int(
            "original_max_position_embeddings", original_max_position_embeddings)
    if scaling is None or "gemma3" in model_type or rope_type in ("llama3", "su"):
        return length
    if rope_type == "yarn":
        if "original_max_position_embeddings" not in scaling:
            raise ValueError("a yarn rope_scaling must give original_max_position_embeddings: vLLM "
                             f"multiplies that length, not max_position_embeddings; got {dict(scaling)}")
        length = check_positive_int("original_max_position_embeddings", scaling["original_max_position_embeddings"])
    return int(length * scaling.get("factor", 1.0))
