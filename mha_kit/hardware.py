"""Accelerator facts: one record per GPU, with the bibliography key of its spec sheet.

Rates are in bytes/s and FLOP/s (dense bf16 tensor-core peak, no 2:4 sparsity); sizes in bytes.

>>> import mha_kit as mk
>>> mk.GPUS["h100-sxm"].ridge_point
295.2238805970149
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from .config import check_positive_int


@dataclass(frozen=True, kw_only=True)
class Accelerator:
    """Peak rates and on-chip memory of one GPU, with where they were read.

    Parameters
    ----------
    name, title : str
        Short key (``"h100-sxm"``) and the name in prose (``"H100 SXM"``).
    cite, source : str
        ``references.bib`` key(s) and the line of the source the numbers come from.
    hbm_bandwidth : float
        Bytes per second between HBM and the chip.
    bf16_flops : float
        Dense bf16 tensor-core FLOP/s.
    hbm_bytes : int
        Bytes of HBM on the chip (decimal gigabytes, as the datasheets print them).
    sram_bytes_per_sm, num_sms : int, optional
        On-chip SRAM per streaming multiprocessor, and the number of multiprocessors.

    Book: chapter "What attention costs".
    """

    name: str  # key of GPUS
    title: str  # name in prose
    cite: str  # references.bib key(s)
    source: str  # where the numbers were read
    hbm_bandwidth: float  # bytes/s
    bf16_flops: float  # dense FLOP/s
    hbm_bytes: int  # bytes of HBM
    sram_bytes_per_sm: int | None = None  # bytes of on-chip SRAM per SM
    num_sms: int | None = None  # streaming multiprocessors

    def __post_init__(self):
        for key in ("hbm_bandwidth", "bf16_flops"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{key} must be a positive number, got {value!r}")
        object.__setattr__(self, "hbm_bytes", check_positive_int("hbm_bytes", self.hbm_bytes))
        for key in ("sram_bytes_per_sm", "num_sms"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte at which the chip turns from memory-bound to compute-bound."""
        return self.bf16_flops / self.hbm_bandwidth


_RECORDS = (
    # The FlashAttention paper (sec. 2.1) describes the A100's SRAM: 192 KB per SM, 108 SMs.
    Accelerator(name="a100-40gb", title="A100 40GB SXM", cite="nvidiaa100,dao2022flashattention",
                source="NVIDIA A100 datasheet (40 GB and 1,555 GB/s HBM2, 312 TFLOPS bf16 dense); "
                       "arXiv:2205.14135 sec. 2.1 (192 KB SRAM per SM, 108 SMs)",
                hbm_bandwidth=1.555e12, bf16_flops=312e12, hbm_bytes=40 * 10**9, sram_bytes_per_sm=192 * 1024, num_sms=108),
    # The SM count is the architecture whitepaper's (H100 SXM5: 132 SMs); the datasheet does not give it.
    Accelerator(name="h100-sxm", title="H100 SXM", cite="nvidiah100,nvidiahopperwhitepaper",
                source="NVIDIA H100 datasheet (80 GB and 3.35 TB/s HBM3, 989 TFLOPS bf16 dense); "
                       "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 SMs)",
                hbm_bandwidth=3.35e12, bf16_flops=989e12, hbm_bytes=80 * 10**9, num_sms=132),
    Accelerator(name="h200-sxm", title="H200 SXM", cite="nvidiah200",
                source="NVIDIA H200 datasheet (141 GB and 4.8 TB/s HBM3e, 989 TFLOPS bf16 dense)",
                hbm_bandwidth=4.8e12, bf16_flops=989e12, hbm_bytes=141 * 10**9),
)

#: Read-only mapping from a short name to its :class:`Accelerator` record.
GPUS = MappingProxyType({gpu.name: gpu for gpu in _RECORDS})
