"""Memory of the model states in mixed-precision Adam training, and how ZeRO shards it.

:func:`zero_model_state_bytes` is the accounting of Rajbhandari et al., ZeRO (SC20), Sec. 3.1 and
Fig. 1: fp16 parameters (2 bytes), fp16 gradients (2 bytes) and the optimizer's K = 12 bytes (fp32
master parameters, momentum and variance) for each of the model's parameters, then divided over the
data-parallel GPUs by ZeRO stage 1 (optimizer states), 2 (and gradients) or 3 (and parameters).

Book: chapter "CUDA for inference engineers" (training memory, next to mixed precision).
"""
from __future__ import annotations

from .config import check_positive_int

#: Bytes per parameter of fp16/bf16 parameters and of their gradients (ZeRO Sec. 3.1).
HALF_BYTES = 2
#: Bytes per parameter of mixed-precision Adam's optimizer states: an fp32 copy of the parameters,
#: the momentum and the variance, 4 bytes each (ZeRO Sec. 3.1, K = 12).
ADAM_STATE_BYTES = 12


def zero_model_state_bytes(n_params, stage=0, n_gpus=1, optimizer_bytes=ADAM_STATE_BYTES) -> float:
    """Bytes of model states (parameters, gradients, optimizer states) held by one GPU.

    Parameters
    ----------
    n_params : int
        Parameters of the model, Psi in the paper.
    stage : int
        ZeRO stage: 0 (plain data parallelism, every GPU holds everything), 1 (optimizer states
        sharded), 2 (and gradients), 3 (and parameters).
    n_gpus : int
        Data-parallel degree N over which the sharded states are split.
    optimizer_bytes : int
        Optimizer-state bytes per parameter, K: 12 for mixed-precision Adam.

    Returns
    -------
    float
        (2 + 2 + K) Psi for stage 0; 2 Psi + 2 Psi + K Psi / N for stage 1; 2 Psi + (2 + K) Psi / N for
        stage 2; (2 + 2 + K) Psi / N for stage 3 (ZeRO Fig. 1).
    """
    psi = check_positive_int("n_params", n_params)
    n = check_positive_int("n_gpus", n_gpus)
    k = check_positive_int("optimizer_bytes", optimizer_bytes)
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {stage!r}")
    sharded = {0: 0, 1: k, 2: k + HALF_BYTES, 3: k + 2 * HALF_BYTES}[stage]  # bytes per parameter split N ways
    whole = 2 * HALF_BYTES + k - sharded  # bytes per parameter every GPU keeps
    return psi * whole + psi * sharded / n
