"""The CPU side of an engine step: how CPU work per step adds to the GPU's, serially or overlapped.

An engine step is CPU work (schedule, prepare the inputs, process the last step's outputs) and GPU
work (the forward pass and sampling). Run one after the other, a step takes their sum and the GPU
idles during the CPU part; with the CPU work for step n+1 done while the GPU runs step n (vLLM's
async scheduling, SGLang's overlap scheduler), a step takes the larger of the two.

Book: chapter "Serving in production", section "Why the engine core has its own process".
"""
from __future__ import annotations


def _check_seconds(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")


def engine_step_seconds(gpu_s, cpu_s, overlap=False) -> float:
    """Seconds per engine step: ``gpu_s + cpu_s`` run serially, ``max(gpu_s, cpu_s)`` overlapped."""
    _check_seconds(gpu_s=gpu_s, cpu_s=cpu_s)
    return max(gpu_s, cpu_s) if overlap else gpu_s + cpu_s


def gpu_busy_fraction(gpu_s, cpu_s, overlap=False) -> float:
    """Share of a step's wall time the GPU computes: ``gpu_s / engine_step_seconds(...)``."""
    total = engine_step_seconds(gpu_s, cpu_s, overlap)
    if total == 0:
        raise ValueError("gpu_s and cpu_s are both 0: a step must take some time")
    return gpu_s / total
