"""AMD Instinct GPUs a vLLM deployment may be ported to: memory, bandwidth, target and FP8 format.

Capacities and bandwidths are the data sheets' (decimal gigabytes, bytes/s) (``amdinstinct``); the LLVM
target (gfx942 for CDNA 3, gfx950 for CDNA 4) is the ROCm specification table's. vLLM's ROCm platform
(vllm/platforms/rocm.py) uses the FNUZ FP8 variant, ``float8_e4m3fnuz``, on gfx94x GPUs only
(``vllmrocmfp8``), so CDNA 4 is back on the OCP ``float8_e4m3fn`` that NVIDIA GPUs use.
These records are kept apart from :data:`mha_kit.GPUS`. Matrix-core (MFMA) peaks are filled in only where
AMD's own documentation was read: the MI300X's, from the ROCm "AMD Instinct MI300 series microarchitecture"
page, table "Peak-performance capabilities of the MI300X" (304 CUs; per CU and clock 2,048 dense BF16 and
4,096 dense FP8 FLOPs; 1,307.4 and 2,614.9 TFLOPS) (``amdmi300arch``). The MI325X and MI355X data sheets
could not be read from here, so their peaks stay ``None``.

Book: chapter "Attention backends in 2026", section "Porting a vLLM deployment from H100 to MI300X".
"""
from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple


class AmdGpu(NamedTuple):
    """One AMD Instinct GPU: ``hbm_bytes`` (bytes), ``hbm_bandwidth`` (bytes/s), ``gfx`` (LLVM target),
    ``fp8`` (the E4M3 dtype vLLM uses on it), and where read from AMD: ``num_cus`` (compute units),
    ``bf16_flops`` and ``fp8_flops`` (dense matrix-core FLOP/s, no sparsity)."""

    name: str
    title: str
    hbm_bytes: int
    hbm_bandwidth: float
    gfx: str
    fp8: str
    num_cus: int | None = None
    bf16_flops: float | None = None
    fp8_flops: float | None = None


def _fp8(gfx):  # vllm/platforms/rocm.py: is_fp8_fnuz() is true on gfx94x
    return "float8_e4m3fnuz" if gfx.startswith("gfx94") else "float8_e4m3fn"


AMD_GPUS = MappingProxyType({g.name: g for g in (
    AmdGpu("mi300x", "MI300X", 192 * 10**9, 5.3e12, "gfx942", _fp8("gfx942"), 304, 1307.4e12, 2614.9e12),
    AmdGpu("mi325x", "MI325X", 256 * 10**9, 6.0e12, "gfx942", _fp8("gfx942")),
    AmdGpu("mi355x", "MI355X", 288 * 10**9, 8.0e12, "gfx950", _fp8("gfx950")),
)})


def weights_fit(weight_bytes, hbm_bytes, num_gpus=1, utilization=0.9) -> float:
    """Bytes per GPU left for the KV cache once the weights are split evenly over ``num_gpus``.

    Parameters
    ----------
    weight_bytes : int
        Bytes of all the weights.
    hbm_bytes : int
        Memory of one GPU.
    num_gpus : int
        GPUs the weights are sharded over (tensor or expert parallel).
    utilization : float
        Fraction of each GPU the engine may use (vLLM's ``--gpu-memory-utilization``), in ``(0, 1]``.

    Returns
    -------
    float
        ``utilization * hbm_bytes - weight_bytes / num_gpus``; negative when the weights do not fit.
        Activations, CUDA graphs and the runtime's own memory are not counted.
    """
    if num_gpus < 1 or not 0.0 < utilization <= 1.0:
        raise ValueError(f"need num_gpus >= 1 and 0 < utilization <= 1, got {num_gpus} and {utilization}")
    return utilization * hbm_bytes - weight_bytes / num_gpus
