"""State-space layers and other linear-time mixers, in numpy, checked form against form.

* Mamba's selective scan (Gu and Dao 2023, sec. 3.2, Algorithm 2): per channel and state
  dimension ``h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t`` and ``y_t = C_t . h_t + D x_t``,
  with ``delta``, ``B``, ``C`` computed from the input. :func:`selective_scan` is the recurrence of
  the reference ``selective_scan_ref`` (state-spaces/mamba, mamba_ssm/ops/selective_scan_interface.py:
  zero-order hold for ``A``, ``delta * B`` for ``B``); :func:`selective_scan_parallel` computes the
  same numbers with an associative scan in ``log2(L)`` steps; :func:`selective_scan_step` is one
  decode step.
* Mamba-2's SSD (Dao and Gu 2024): with ``A`` a scalar per head the whole layer is one
  ``L x L`` matrix, a 1-semiseparable mask times ``C B^T`` (:func:`ssd_mask`,
  :func:`ssd_quadratic`): masked linear attention.
* Performer's FAVOR+ (Choromanski et al. 2021): positive random features whose inner products
  estimate ``exp(q . k)`` (:func:`favor_features`, :func:`performer_attention`).
* RWKV's WKV (Peng et al. 2023): a decayed weighted average of values with a bonus for the
  current token (:func:`rwkv_wkv`).
* What each keeps per sequence: :func:`mamba_state_elements`, :func:`mamba2_state_elements`,
  :func:`gated_deltanet_state_elements`, and :data:`HYBRID_MODELS`, against a KV cache.

Book: chapter "State-space models and linear-time layers".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import check_positive_int
from .units import elements_to_bytes

#: The forms :func:`rwkv_wkv` computes.
WKV_FORMS = ("parallel", "recurrent")


def _scan_inputs(x, delta, A, B, C):
    """Check shapes; return ``exp(delta A)`` and ``delta B x``, both ``(L, d, N)``."""
    x, delta, A, B, C = (np.asarray(a, dtype=float) for a in (x, delta, A, B, C))
    if x.ndim != 2 or delta.shape != x.shape or A.shape[:1] != x.shape[1:] or A.ndim != 2:
        raise ValueError(f"expected x and delta of shape (L, d) and A of shape (d, N); got x {x.shape}, "
                         f"delta {delta.shape}, A {A.shape}")
    if B.shape != (x.shape[0], A.shape[1]) or C.shape != B.shape:
        raise ValueError(f"expected B and C of shape (L, N) = {(x.shape[0], A.shape[1])}; got {B.shape}, {C.shape}")
    decay = np.exp(delta[:, :, None] * A[None])  # (L, d, 1) * (1, d, N): zero-order hold for A
    drive = delta[:, :, None] * B[:, None, :] * x[:, :, None]  # (L, d, N): delta B, then times x
    return x, C, decay, drive


def _output(x, C, states, D):
    y = np.einsum("ldn,ln->ld", states, C)  # y_t = C_t . h_t for each channel
    return y if D is None else y + x * np.asarray(D, dtype=float)[None, :]


def selective_scan(x, delta, A, B, C, D=None):
    """Mamba's selective scan as a recurrence, one token at a time (``selective_scan_ref``).

    Parameters
    ----------
    x : ndarray, shape (L, d)
        The layer's inner activations (``u`` in the reference, stored there as ``(batch, d, L)``).
    delta : ndarray, shape (L, d)
        Step sizes, positive (the reference applies ``softplus`` first).
    A : ndarray, shape (d, N)
        Negative, so that ``exp(delta A) < 1`` forgets.
    B, C : ndarray, shape (L, N)
        Input and output projections, one per token.
    D : ndarray, shape (d,), optional
        The skip connection.

    Returns
    -------
    y : ndarray, shape (L, d)
    state : ndarray, shape (d, N)
        ``h_L``, all that decoding needs next.
    """
    x, C, decay, drive = _scan_inputs(x, delta, A, B, C)
    h = np.zeros(decay.shape[1:])  # (d, N)
    states = np.empty_like(decay)
    for t in range(x.shape[0]):
        h = decay[t] * h + drive[t]  # h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t
        states[t] = h
    return _output(x, C, states, D), h


def selective_scan_parallel(x, delta, A, B, C, D=None):
    """The same scan as :func:`selective_scan`, by an associative (Hillis-Steele) scan.

    Each step is the affine map ``h -> a h + b``; two maps compose as
    ``(a1, b1) then (a2, b2) = (a1 a2, a2 b1 + b2)``, an associative operation, so all ``L``
    prefixes are found in ``ceil(log2 L)`` rounds of elementwise work (what a GPU parallelises;
    Mamba's kernel scans in SRAM, sec. 3.3.2). Same parameters and returns.
    """
    x, C, a, b = _scan_inputs(x, delta, A, B, C)
    shift = 1
    while shift < x.shape[0]:  # after the round, position t holds the composition of t - 2 shift + 1 .. t
        a_prev, b_prev = a[:-shift], b[:-shift]
        a, b = (np.concatenate([a[:shift], a[shift:] * a_prev]),
                np.concatenate([b[:shift], a[shift:] * b_prev + b[shift:]]))
        shift *= 2
    return _output(x, C, b, D), b[-1]  # with h_0 = 0, h_t is the b of the composed map


def selective_scan_step(state, x, delta, A, B, C, D=None):
    """One decode step: ``h = exp(delta A) h + delta B x``, ``y = C . h + D x``.

    Parameters
    ----------
    state : ndarray, shape (d, N)
    x, delta : ndarray, shape (d,)
    A : ndarray, shape (d, N)
    B, C : ndarray, shape (N,)
    D : ndarray, shape (d,), optional

    Returns
    -------
    y : ndarray, shape (d,)
    state : ndarray, shape (d, N)
    """
    state = np.asarray(state, dtype=float)
    if state.shape != np.shape(A):
        raise ValueError(f"state must have A's shape (d, N) = {np.shape(A)}, got {state.shape}")
    x1, C1, decay, drive = _scan_inputs(np.asarray(x)[None], np.asarray(delta)[None], A,
                                        np.asarray(B)[None], np.asarray(C)[None])  # a sequence of one token
    new_state = decay[0] * state + drive[0]  # (d, N)
    return _output(x1, C1, new_state[None], D)[0], new_state


def ssd_mask(log_a):
    """Mamba-2's 1-semiseparable mask: ``M[i, j] = a_{j+1} a_{j+2} ... a_i`` for ``j <= i``, else 0.

    Computed from the cumulative sum of ``log a`` (``segsum`` in the reference
    ``mamba_ssm/modules/ssd_minimal.py``). ``M[i, i] = 1``.

    Parameters
    ----------
    log_a : ndarray, shape (L,)
        ``delta_t A`` for a scalar ``A``: the log of each step's decay.

    Returns
    -------
    ndarray, shape (L, L)
    """
    log_a = np.asarray(log_a, dtype=float).reshape(-1)
    cum = np.cumsum(log_a)  # cum[i] - cum[j] = log a_{j+1} + ... + log a_i
    diff = cum[:, None] - cum[None, :]  # (L, L)
    lower = np.tril(np.ones((log_a.size, log_a.size), dtype=bool))
    return np.where(lower, np.exp(np.where(lower, diff, 0.0)), 0.0)


def ssd_quadratic(x, dt, A, B, C):
    """One Mamba-2 head in its quadratic ("attention") form: ``y = (M * (C B^T)) (dt x)``.

    With ``A`` a scalar the recurrence ``h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t^T`` unrolls to
    ``y_i = sum_{j <= i} M[i, j] (C_i . B_j) dt_j x_j``: attention with ``C`` as queries, ``B`` as
    keys, ``dt x`` as values and the mask :func:`ssd_mask` in place of the softmax.

    Parameters
    ----------
    x : ndarray, shape (L, P)
        One head's channels (``headdim`` P).
    dt : ndarray, shape (L,)
        One step size per token and head.
    A : float
        Negative.
    B, C : ndarray, shape (L, N)

    Returns
    -------
    ndarray, shape (L, P)
    """
    x, dt, B, C = (np.asarray(a, dtype=float) for a in (x, dt, B, C))
    if x.ndim != 2 or dt.shape != x.shape[:1] or B.shape != C.shape or B.shape[0] != x.shape[0]:
        raise ValueError(f"expected x (L, P), dt (L,), B and C (L, N); got {x.shape}, {dt.shape}, {B.shape}, {C.shape}")
    scores = C @ B.T  # (L, N) @ (N, L) -> (L, L), like q k^T
    return (ssd_mask(dt * float(A)) * scores) @ (dt[:, None] * x)  # (L, L) @ (L, P) -> (L, P)


def orthogonal_gaussian(num_features, dim, seed=0):
    """Random projections with orthogonal rows in blocks of ``dim``, each row the length of a Gaussian.

    Performer's orthogonal random features (sec. 2.4): stack ``Q`` factors of Gaussian matrices and
    rescale each row by the norm of an independent Gaussian vector, so every row is marginally
    ``N(0, I)`` but rows within a block are exactly orthogonal.

    Returns
    -------
    ndarray, shape (num_features, dim)
    """
    m, d = check_positive_int("num_features", num_features), check_positive_int("dim", dim)
    rng = np.random.default_rng(seed)
    blocks = [np.linalg.qr(rng.normal(size=(d, d)))[0].T for _ in range(-(-m // d))]  # each (d, d)
    rows = np.concatenate(blocks)[:m]  # (m, d), unit rows
    return rows * np.linalg.norm(rng.normal(size=(m, d)), axis=1)[:, None]


def favor_features(x, projection):
    """FAVOR+'s positive features: ``phi(x) = exp(w_i . x - |x|^2 / 2) / sqrt(m)`` for each row ``w_i``.

    For ``w ~ N(0, I)``, ``E[phi(q) . phi(k)] = exp(q . k)`` (Lemma 1), and every feature is
    positive, so the estimated normaliser never goes negative.

    Parameters
    ----------
    x : ndarray, shape (..., n, d)
    projection : ndarray, shape (m, d)

    Returns
    -------
    ndarray, shape (..., n, m)
    """
    x, w = np.asarray(x, dtype=float), np.asarray(projection, dtype=float)
    if w.ndim != 2 or w.shape[1] != x.shape[-1]:
        raise ValueError(f"projection must have shape (m, {x.shape[-1]}), got {w.shape}")
    return np.exp(x @ w.T - 0.5 * (x * x).sum(-1, keepdims=True)) / np.sqrt(w.shape[0])  # (..., n, m)


def performer_attention(q, k, v, num_features, seed=0):
    """Bidirectional attention with FAVOR+: ``phi(q) (phi(k)^T v)``, normalised, in ``O(n m d)``.

    ``q`` and ``k`` are scaled by ``d_h ** -0.25`` first, so that ``exp(q' . k')`` is softmax's
    ``exp(q . k / sqrt(d_h))``; the features use :func:`orthogonal_gaussian` projections.

    Parameters
    ----------
    q : ndarray, shape (..., n, d_h)
    k : ndarray, shape (..., s, d_h)
    v : ndarray, shape (..., s, d_v)
    num_features : int
        ``m``.

    Returns
    -------
    ndarray, shape (..., n, d_v)
    """
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    scale = q.shape[-1] ** -0.25
    w = orthogonal_gaussian(num_features, q.shape[-1], seed)
    phi_q, phi_k = favor_features(q * scale, w), favor_features(k * scale, w)  # (..., n, m), (..., s, m)
    kv = np.swapaxes(phi_k, -1, -2) @ v  # (..., m, s) @ (..., s, d_v) -> (..., m, d_v)
    normaliser = phi_q @ phi_k.sum(axis=-2)[..., None]  # (..., n, m) @ (..., m, 1) -> (..., n, 1)
    return (phi_q @ kv) / normaliser


def _wkv_parallel(w, u, k, v):
    T = k.shape[0]
    t, i = np.arange(T)[:, None], np.arange(T)[None, :]  # (T, 1) now, (1, T) the past token
    ages = (t - 1 - i)[:, :, None]  # (T, T, 1): how many steps the past token i has decayed by at t
    weight = np.where((i < t)[:, :, None], -ages * w + k[None, :, :], -np.inf)  # (T, T, d)
    weight = np.where((i == t)[:, :, None], u + k[None, :, :], weight)  # the current token gets the bonus u
    e = np.exp(weight)  # (T, T, d); exp(-inf) = 0 for the future
    return (e * v[None]).sum(axis=1) / e.sum(axis=1)


def _wkv_recurrent(w, u, k, v):
    num, den = np.zeros(k.shape[1]), np.zeros(k.shape[1])  # the state: two vectors of d per layer
    out = np.empty_like(v)
    for t in range(k.shape[0]):
        bonus = np.exp(u + k[t])
        out[t] = (num + bonus * v[t]) / (den + bonus)
        num = np.exp(-w) * num + np.exp(k[t]) * v[t]  # decay the past, add token t
        den = np.exp(-w) * den + np.exp(k[t])
    return out


def rwkv_wkv(w, u, k, v, form="recurrent"):
    """RWKV-4's WKV: per channel, a decayed average of past values plus a bonus for the current one.

    ``wkv_t = (sum_{i<t} e^{-(t-1-i) w + k_i} v_i + e^{u + k_t} v_t) / (same sums without v)``
    (Peng et al. 2023, sec. 3.1). ``"recurrent"`` carries two vectors of ``d`` numbers (the
    numerator and denominator sums) from token to token; ``"parallel"`` forms all ``T x T``
    weights. No max-subtraction here, so inputs must be modest.

    Parameters
    ----------
    w : ndarray, shape (d,)
        Decay rates, positive (``exp(time_decay)`` in the reference).
    u : ndarray, shape (d,)
        The bonus of the current token (``time_first``).
    k, v : ndarray, shape (T, d)
    form : {"recurrent", "parallel"}

    Returns
    -------
    ndarray, shape (T, d)
    """
    w, u, k, v = (np.asarray(a, dtype=float) for a in (w, u, k, v))
    if form not in WKV_FORMS:
        raise ValueError(f"form must be one of {WKV_FORMS}, got {form!r}")
    if k.ndim != 2 or v.shape != k.shape or w.shape != k.shape[1:] or u.shape != w.shape:
        raise ValueError(f"expected w and u of shape (d,), k and v of shape (T, d); got {w.shape}, {u.shape}, "
                         f"{k.shape}, {v.shape}")
    if not (w > 0).all():
        raise ValueError(f"decay rates w must be positive, got a smallest of {w.min()!r}")
    return (_wkv_recurrent if form == "recurrent" else _wkv_parallel)(w, u, k, v)


def mamba_state_elements(d_model, d_state=16, expand=2, d_conv=4) -> int:
    """Numbers one Mamba layer keeps per sequence: ``d_inner x d_state`` SSM state plus the conv window.

    ``d_inner = expand * d_model``; the causal convolution keeps the last ``d_conv - 1`` inputs
    of each inner channel (vLLM's ``MambaStateShapeCalculator.mamba1_state_shape``; the reference
    ``Mamba.allocate_inference_cache`` allocates ``d_conv`` columns). Independent of the context.
    Defaults are the reference ``Mamba`` defaults.
    """
    d, n, e, w = (check_positive_int(k, v) for k, v in (("d_model", d_model), ("d_state", d_state),
                                                         ("expand", expand), ("d_conv", d_conv)))
    return e * d * n + e * d * (w - 1)


def mamba2_state_elements(d_model, d_state=128, expand=2, headdim=64, ngroups=1, d_conv=4) -> int:
    """Numbers one Mamba-2 layer keeps per sequence: ``nheads x headdim x d_state`` plus the conv window.

    ``nheads = expand * d_model / headdim``; the convolution runs over ``x``, ``B`` and ``C``,
    ``d_inner + 2 ngroups d_state`` channels, and keeps ``d_conv - 1`` inputs of each (reference
    ``Mamba2.allocate_inference_cache``: ``ssm_state`` of shape ``(nheads, headdim, d_state)``,
    conv over ``conv_dim`` channels). Defaults are the reference ``Mamba2`` defaults.
    """
    d, n, e, p, g, w = (check_positive_int(k, v) for k, v in (
        ("d_model", d_model), ("d_state", d_state), ("expand", expand), ("headdim", headdim),
        ("ngroups", ngroups), ("d_conv", d_conv)))
    d_inner = e * d
    if d_inner % p:
        raise ValueError(f"expand * d_model ({d_inner}) must be divisible by headdim ({p})")
    return (d_inner // p) * p * n + (d_inner + 2 * g * n) * (w - 1)


def gated_deltanet_state_elements(num_key_heads, num_value_heads, key_head_dim, value_head_dim, d_conv=4) -> int:
    """Numbers one Gated DeltaNet layer (Qwen3-Next's linear attention) keeps per sequence.

    Each value head keeps a ``key_head_dim x value_head_dim`` matrix; the short convolution runs
    over queries, keys and values (``2 num_key_heads key_head_dim + num_value_heads value_head_dim``
    channels) and keeps ``d_conv - 1`` inputs of each.
    """
    hk, hv, dk, dv, w = (check_positive_int(k, v) for k, v in (
        ("num_key_heads", num_key_heads), ("num_value_heads", num_value_heads),
        ("key_head_dim", key_head_dim), ("value_head_dim", value_head_dim), ("d_conv", d_conv)))
    return hv * dk * dv + (2 * hk * dk + hv * dv) * (w - 1)


def mamba_state_bytes(d_model, d_state=16, expand=2, d_conv=4, fmt="bf16") -> int:
    """:func:`mamba_state_elements` in bytes of ``fmt``: one Mamba layer, one sequence."""
    return elements_to_bytes(mamba_state_elements(d_model, d_state, expand, d_conv), fmt)


def mamba2_state_bytes(d_model, d_state=128, expand=2, headdim=64, ngroups=1, d_conv=4, fmt="bf16") -> int:
    """:func:`mamba2_state_elements` in bytes of ``fmt``: one Mamba-2 layer, one sequence."""
    return elements_to_bytes(mamba2_state_elements(d_model, d_state, expand, headdim, ngroups, d_conv), fmt)


@dataclass(frozen=True)
class HybridModel:
    """Token-mixing layers of a model, as far as its per-sequence cache is concerned.

    ``attention_layers`` keep keys and values of every token (``num_kv_heads x head_dim`` each);
    ``state_layers`` keep ``state_elements`` numbers each, whatever the context.
    """

    title: str
    attention_layers: int  # layers with a KV cache
    state_layers: int  # Mamba / Gated DeltaNet layers with a fixed state
    num_kv_heads: int  # KV heads of an attention layer (0 when there is none)
    head_dim: int  # head size of an attention layer
    state_elements: int  # numbers one state layer keeps per sequence
    source: str  # where the numbers were read
    latent_per_token: int = 0  # MLA layers: numbers cached per token (kv_lora_rank + rope dim); 0 = 2 KV heads x dim

    @property
    def kv_per_token(self) -> int:
        """Numbers one attention layer caches per token: the MLA latent, or keys and values."""
        return self.latent_per_token or 2 * self.num_kv_heads * self.head_dim

    def cache_bytes(self, context_len, fmt="bf16", state_fmt="bf16") -> int:
        """Bytes one sequence of ``context_len`` tokens keeps: KV of the attention layers plus the states."""
        s = check_positive_int("context_len", context_len)
        kv = elements_to_bytes(self.attention_layers * self.kv_per_token * s, fmt)
        return kv + elements_to_bytes(self.state_layers * self.state_elements, state_fmt)


#: Published hybrids and pure SSMs, read from their config.json (see each ``source``).
HYBRID_MODELS = {
    "mamba-2.8b": HybridModel(
        "Mamba 2.8B", 0, 64, 0, 0, mamba_state_elements(2560, d_state=16, expand=2, d_conv=4),
        "state-spaces/mamba-2.8b-hf config.json: hidden_size 2560, n_layer 64, state_size 16, expand 2, "
        "conv_kernel 4"),
    "mamba2-2.7b": HybridModel(
        "Mamba-2 2.7B", 0, 64, 0, 0, mamba2_state_elements(2560),
        "state-spaces/mamba2-2.7b config.json: d_model 2560, n_layer 64, ssm_cfg layer Mamba2 (reference "
        "Mamba2 defaults: d_state 128, expand 2, headdim 64, ngroups 1, d_conv 4)"),
    "jamba-v0.1": HybridModel(
        "Jamba v0.1", 4, 28, 8, 128, mamba_state_elements(4096, d_state=16, expand=2, d_conv=4),
        "ai21labs/Jamba-v0.1 config.json: 32 layers, attn_layer_period 8 (4 attention layers), hidden_size "
        "4096, 32 heads, 8 KV heads, mamba_d_state 16, mamba_expand 2, mamba_d_conv 4"),
    "qwen3-next-80b-a3b": HybridModel(
        "Qwen3-Next 80B-A3B", 12, 36, 2, 256, gated_deltanet_state_elements(16, 32, 128, 128, d_conv=4),
        "Qwen/Qwen3-Next-80B-A3B-Instruct config.json: 48 layers, full_attention_interval 4, 2 KV heads of "
        "256; linear_num_key_heads 16, linear_num_value_heads 32, key and value head dim 128, conv kernel 4"),
    "kimi-linear-48b-a3b": HybridModel(
        "Kimi Linear 48B-A3B", 7, 20, 1, 576, gated_deltanet_state_elements(32, 32, 128, 128, d_conv=4),
        "moonshotai/Kimi-Linear-48B-A3B-Instruct config.json: 27 layers, linear_attn_config full_attn_layers "
        "[4, 8, 12, 16, 20, 24, 27] (MLA), the other 20 KDA with num_heads 32, head_dim 128, "
        "short_conv_kernel_size 4; MLA kv_lora_rank 512, qk_rope_head_dim 64 (576 cached numbers per token)",
        latent_per_token=576),
    "minimax-m1": HybridModel(
        "MiniMax-M1", 10, 70, 8, 128, 64 * 128 * 128,
        "MiniMaxAI/MiniMax-M1-80k config.json: 80 layers, attn_type_list seven 0 (lightning) then one 1 "
        "(softmax) per eight; 64 heads of 128, 8 KV heads; a lightning layer keeps a 128 x 128 state per head"),
    "minimax-m2": HybridModel(
        "MiniMax-M2", 62, 0, 8, 128, 0,
        "MiniMaxAI/MiniMax-M2 config.json: 62 layers, attn_type_list all 1 (full attention), 48 heads, "
        "8 KV heads of 128"),
}


#: Nemotron-H 8B's layer pattern, the default ``hybrid_override_pattern`` of ``NemotronHConfig``
#: (vLLM vllm/transformers_utils/configs/nemotron_h.py): M = Mamba-2, * = attention, - = MLP.
NEMOTRON_H_8B_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"


def associative_recall_error(num_pairs, dim, seed=0) -> float:
    """How well a fixed ``dim x dim`` state recalls ``num_pairs`` key-value pairs written into it.

    Writes ``S = sum_i k_i v_i^T`` with random unit keys and random values (the state of linear
    attention, or of an SSM without decay), reads ``k_j^T S`` back for every key and returns the
    relative error ``|V_hat - V| / |V|``. With at most ``dim`` orthogonal keys recall would be exact;
    random keys interfere, and past ``dim`` pairs the state cannot hold them all.
    """
    n, d = check_positive_int("num_pairs", num_pairs), check_positive_int("dim", dim)
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(n, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)  # (n, d) unit keys
    values = rng.normal(size=(n, d))
    state = keys.T @ values  # (d, n) @ (n, d) -> (d, d): the whole memory
    recalled = keys @ state  # (n, d) @ (d, d) -> (n, d)
    return float(np.linalg.norm(recalled - values) / np.linalg.norm(values))


def hippo_legs(state_size):
    """The HiPPO-LegS matrices (Gu et al. 2020, sec. 3, Theorem 2; S4, Gu et al. 2022, sec. 2, eq. 2).

    ``A[n, k] = -sqrt(2n+1) sqrt(2k+1)`` below the diagonal, ``-(n+1)`` on it, ``0`` above, and
    ``B[n] = sqrt(2n+1)``, for ``n, k = 0 .. N-1``. With the scaled dynamics
    ``c'(t) = A c(t) / t + B f(t) / t`` the state ``c(t)`` holds the coefficients of the best
    approximation of the whole history ``f`` on ``[0, t]`` by Legendre polynomials (uniform weight).

    Parameters
    ----------
    state_size : int
        ``N``, the number of Legendre coefficients kept.

    Returns
    -------
    A : array, shape (N, N), lower triangular
    B : array, shape (N,)
    """
    N = check_positive_int("state_size", state_size)
    r = np.sqrt(2 * np.arange(N) + 1.0)  # sqrt(2n + 1)
    A = -np.tril(np.outer(r, r), -1) - np.diag(np.arange(1.0, N + 1))  # (N, N)
    return A, r.copy()


def hippo_legs_memory(f, state_size):
    """Run HiPPO-LegS over a sequence: the Legendre coefficients of ``f[0..t]`` after every step ``t``.

    Step ``t = 1 .. L`` applies the bilinear (Tustin) discretisation of ``c' = (A c + B f) / t`` with
    step 1 (HiPPO sec. 3 and its code's ``GBT`` with alpha 1/2).

    Parameters
    ----------
    f : array, shape (L,)
    state_size : int

    Returns
    -------
    c : array, shape (L, N)
        ``c[t - 1]`` approximates the history up to step ``t``; read it back with
        :func:`hippo_legs_reconstruct`.
    """
    f = np.asarray(f, dtype=float)
    if f.ndim != 1:
        raise ValueError(f"f must be one sequence of shape (L,), got {f.shape}")
    A, B = hippo_legs(state_size)
    eye, c, out = np.eye(A.shape[0]), np.zeros(A.shape[0]), np.empty((f.size, A.shape[0]))
    for t in range(1, f.size + 1):
        lhs = eye - A / (2 * t)  # (N, N)
        c = np.linalg.solve(lhs, (eye + A / (2 * t)) @ c + B * f[t - 1] / t)
        out[t - 1] = c
    return out


def hippo_legs_reconstruct(c, x):
    """The history a LegS state describes: ``sum_n c_n sqrt(2n+1) P_n(2x - 1)`` at fractions ``x`` of it.

    Parameters
    ----------
    c : array, shape (N,)
        One state from :func:`hippo_legs_memory`.
    x : array, shape (m,)
        Positions in ``[0, 1]``: 0 is the first step, 1 the latest.

    Returns
    -------
    f_hat : array, shape (m,)
    """
    c, x = np.asarray(c, dtype=float), np.asarray(x, dtype=float)
    if c.ndim != 1 or (x < 0).any() or (x > 1).any():
        raise ValueError(f"c must be one state (N,) and x lie in [0, 1], got shape {c.shape}, x in "
                         f"[{x.min()!r}, {x.max()!r}]")
    return np.polynomial.legendre.legval(2 * x - 1, c * np.sqrt(2 * np.arange(c.size) + 1.0))
