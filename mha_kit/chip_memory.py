"""Memory capacity and bandwidth of accelerators that have no record in :data:`mha_kit.GPUS` or
:data:`mha_kit.AMD_GPUS`: Google TPUs, AWS Trainium and Inferentia, and a GDDR data-centre GPU.

Each record is copied from the vendor's page named by its ``cite`` key: the TPU rows from the Cloud TPU7x
page's comparison table (HBM in GiB, bandwidth in GB/s) (``googletpu7x``), the AWS rows from the Neuron
architecture guides (``awstrainium2``, ``awstrainium3``, ``awsinferentia2``), the L40S from NVIDIA's data
sheet (``nvidial40s``). Only memory is recorded: these chips' matrix units are not comparable peak for peak.

Book: chapter "From one GPU to a fleet", section "NVIDIA, AMD, TPU or Trainium"; chapter "Attention kernels
on the GPU", section "Hopper to Blackwell".
"""
from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

GIB = 2**30


class ChipMemory(NamedTuple):
    """One accelerator's device memory: ``memory_bytes`` (bytes), ``bandwidth`` (bytes/s), ``kind``
    (``"HBM"`` or ``"GDDR6"``), ``vendor`` and ``cite`` (bibliography key of the page it was read from)."""

    name: str
    title: str
    vendor: str
    memory_bytes: int
    bandwidth: float
    kind: str
    cite: str


CHIP_MEMORY = MappingProxyType({c.name: c for c in (
    ChipMemory("tpu-v5p", "TPU v5p", "Google", 95 * GIB, 2765e9, "HBM", "googletpu7x"),
    ChipMemory("tpu-v6e", "TPU v6e", "Google", 32 * GIB, 1638e9, "HBM", "googletpu7x"),
    ChipMemory("tpu7x", "TPU7x", "Google", 192 * GIB, 7380e9, "HBM", "googletpu7x"),
    ChipMemory("trainium2", "Trainium2", "AWS", 96 * GIB, 2.9e12, "HBM", "awstrainium2"),
    ChipMemory("trainium3", "Trainium3", "AWS", 144 * GIB, 4.9e12, "HBM", "awstrainium3"),
    ChipMemory("inferentia2", "Inferentia2", "AWS", 32 * GIB, 820e9, "HBM", "awsinferentia2"),
    ChipMemory("l40s", "L40S", "NVIDIA", 48 * 10**9, 864e9, "GDDR6", "nvidial40s"),
)})


def chips_for_weights(weight_bytes, memory_bytes, weight_share=0.7) -> int:
    """Smallest power-of-two number of chips whose memory holds the weights within ``weight_share`` of it.

    Parameters
    ----------
    weight_bytes : int
        Bytes of all the weights.
    memory_bytes : int
        Device memory of one chip.
    weight_share : float
        Fraction of each chip the weights may fill, in ``(0, 1]``; the rest is left for the KV cache.

    Returns
    -------
    int
        ``2 ** ceil(log2(ceil(weight_bytes / (weight_share * memory_bytes))))``, at least 1: tensor
        parallelism splits heads evenly over a power of two.
    """
    if weight_bytes <= 0 or memory_bytes <= 0:
        raise ValueError(f"need weight_bytes > 0 and memory_bytes > 0, got {weight_bytes} and {memory_bytes}")
    if not 0.0 < weight_share <= 1.0:
        raise ValueError(f"need 0 < weight_share <= 1, got {weight_share}")
    needed = -(-weight_bytes // (weight_share * memory_bytes))  # ceil, as a float
    chips = 1
    while chips < needed:
        chips *= 2
    return chips
