"""Training-state memory per GPU: what ZeRO shards, and what a 1F1B pipeline stage keeps alive.

Mixed-precision Adam keeps, per parameter, 2 bytes of fp16/bf16 weights, 2 of gradients and K = 12 of
optimizer state (fp32 master weights, momentum, variance): 16 bytes (Rajbhandari et al. 2020, sec. 3.1).
ZeRO partitions the optimizer state (stage 1), then the gradients (stage 2), then the weights (stage 3)
over the data-parallel GPUs (sec. 5, Figure 1). Book: chapter "Tensor parallelism", sections
``tensor_parallel-zero`` and ``tensor_parallel-pp-memory``.

>>> import mha_kit as mk
>>> round(mk.zero_bytes_per_gpu(7.5e9, 64, 1) / 1e9, 1)  # the paper's Figure 1 example
31.4
"""
from __future__ import annotations

from .config import check_positive_int, check_positive_number

#: Bytes a parameter takes in fp16/bf16 weights and in gradients; Adam's fp32 state (master, m, v).
WEIGHT_BYTES, GRAD_BYTES, ADAM_STATE_BYTES = 2, 2, 12


def zero_bytes_per_gpu(num_params, num_gpus, stage, state_bytes=ADAM_STATE_BYTES) -> float:
    """Model-state bytes on one of ``num_gpus`` data-parallel GPUs under ZeRO ``stage`` (activations excluded).

    Parameters
    ----------
    num_params : float
        Parameters of the model (Psi).
    num_gpus : int
        Data-parallel degree N_d.
    stage : int
        0 (plain data parallelism), 1 (optimizer state sharded), 2 (+ gradients), 3 (+ weights).
    state_bytes : float
        Optimizer-state bytes per parameter, K (12 for mixed-precision Adam).

    Returns
    -------
    float
        ``(2 + 2 + K) Psi`` at stage 0; ``2 Psi + 2 Psi + K Psi / N_d`` at stage 1; ``2 Psi + (2 + K) Psi / N_d``
        at stage 2; ``(2 + 2 + K) Psi / N_d`` at stage 3 (Rajbhandari et al. 2020, Figure 1).
    """
    psi = check_positive_number("num_params", num_params)
    n = check_positive_int("num_gpus", num_gpus)
    k = check_positive_number("state_bytes", state_bytes)
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"the ZeRO stage must be 0, 1, 2 or 3, got {stage!r}")
    sharded = {0: 0.0, 1: k, 2: k + GRAD_BYTES, 3: k + GRAD_BYTES + WEIGHT_BYTES}[stage]
    replicated = WEIGHT_BYTES + GRAD_BYTES + k - sharded
    return replicated * psi + sharded * psi / n


def one_f_one_b_in_flight(stages, stage) -> int:
    """Micro-batches whose activations stage ``stage`` (0-based) holds at the peak of a 1F1B schedule.

    Stage ``s`` of ``p`` runs ``p - s`` forwards before its first backward (Narayanan et al. 2021,
    sec. 2.2.1), so the first stage holds ``p`` micro-batches and the last holds one.

    Parameters
    ----------
    stages : int
        Pipeline depth p.
    stage : int
        0 <= stage < p.

    Returns
    -------
    int
        ``p - stage``.
    """
    p = check_positive_int("stages", stages)
    if not 0 <= stage < p:
        raise ValueError(f"the stage index must satisfy 0 <= stage < stages = {p}, got {stage!r}")
    return p - stage
