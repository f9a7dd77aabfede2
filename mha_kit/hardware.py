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
    registers_per_sm, shared_bytes_per_sm, max_warps_per_sm : int, optional
        What one SM offers the thread blocks resident on it: 32-bit registers, the largest
        shared-memory carve-out in bytes, and resident warps (chapter "Attention kernels on the GPU").

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
    registers_per_sm: int | None = None  # 32-bit registers per SM
    shared_bytes_per_sm: int | None = None  # largest shared-memory carve-out per SM, bytes
    max_warps_per_sm: int | None = None  # resident warps per SM

    def __post_init__(self):
        for key in ("hbm_bandwidth", "bf16_flops"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{key} must be a positive number, got {value!r}")
        object.__setattr__(self, "hbm_bytes", check_positive_int("hbm_bytes", self.hbm_bytes))
        for key in ("sram_bytes_per_sm", "num_sms", "registers_per_sm", "shared_bytes_per_sm", "max_warps_per_sm"):
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
    # The 80 GB part has the same chip and peak; only its HBM2e is larger and faster.
    Accelerator(name="a100-80gb", title="A100 80GB SXM", cite="nvidiaa100",
                source="NVIDIA A100 datasheet (80 GB and 2,039 GB/s HBM2e, 312 TFLOPS bf16 dense)",
                hbm_bandwidth=2.039e12, bf16_flops=312e12, hbm_bytes=80 * 10**9, sram_bytes_per_sm=192 * 1024, num_sms=108),
    # The SM count is the architecture whitepaper's (H100 SXM5: 132 SMs); the datasheet does not give it.
    # The per-SM limits are compute capability 9.0's, from the Hopper Tuning Guide, sec. 1.4.1.1
    # (Occupancy): 64K 32-bit registers, 64 resident warps, up to 228 KB of shared memory per SM.
    Accelerator(name="h100-sxm", title="H100 SXM", cite="nvidiah100,nvidiahopperwhitepaper,nvidiahoppertuning",
                source="NVIDIA H100 datasheet (80 GB and 3.35 TB/s HBM3, 989 TFLOPS bf16 dense); "
                       "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 SMs); "
                       "Hopper Tuning Guide sec. 1.4.1.1 (64K registers, 64 warps, 228 KB shared memory per SM)",
                hbm_bandwidth=3.35e12, bf16_flops=989e12, hbm_bytes=80 * 10**9, num_sms=132,
                registers_per_sm=65_536, shared_bytes_per_sm=228 * 1024, max_warps_per_sm=64),
    Accelerator(name="h200-sxm", title="H200 SXM", cite="nvidiah200",
                source="NVIDIA H200 datasheet (141 GB and 4.8 TB/s HBM3e, 989 TFLOPS bf16 dense)",
                hbm_bandwidth=4.8e12, bf16_flops=989e12, hbm_bytes=141 * 10**9),
)

#: Read-only mapping from a short name to its :class:`Accelerator` record.
GPUS = MappingProxyType({gpu.name: gpu for gpu in _RECORDS})


# --- Links and nodes: where a KV cache travels when it leaves the GPU ----------------------------

@dataclass(frozen=True, kw_only=True)
class Link:
    """One data path and its peak rate **in one direction**, with where the rate was read.

    A KV cache moves one way (prefill GPU to decode GPU, GPU to host and back), so the rate is
    per direction; datasheets often print the two directions added up (NVLink's 900 GB/s).

    Parameters
    ----------
    name, title : str
        Short key (``"ib-ndr"``) and the name in prose.
    cite, source : str
        ``references.bib`` key(s) and the line of the source the rate comes from.
    bytes_per_s : float
        Peak bytes per second, one direction, before protocol overheads.

    Book: chapter "Disaggregated prefill and decode".
    """

    name: str  # key of LINKS
    title: str  # name in prose
    cite: str  # references.bib key(s)
    source: str  # where the rate was read
    bytes_per_s: float  # one direction

    def __post_init__(self):
        if isinstance(self.bytes_per_s, bool) or not isinstance(self.bytes_per_s, (int, float)) \
                or not self.bytes_per_s > 0:
            raise ValueError(f"bytes_per_s must be a positive number, got {self.bytes_per_s!r}")


_LINKS = (
    Link(name="nvlink4", title="NVLink 4 (H100)", cite="nvidiahopperarch",
         source="H100 whitepaper: 18 NVLink 4 links, 900 GB/s total bidirectional per GPU, so 450 GB/s each way",
         bytes_per_s=450e9),
    Link(name="pcie5-x16", title="PCIe Gen5 x16", cite="nvidiahopperarch,pcisig",
         source="H100 whitepaper: PCIe Gen5 128 GB/s total, 64 GB/s in each direction (32 GT/s x 16 lanes)",
         bytes_per_s=64e9),
    Link(name="ib-ndr", title="InfiniBand NDR, one 400 Gb/s port", cite="nvidiadgxh100",
         source="DGX H100 datasheet: 8 single-port ConnectX-7, up to 400 Gb/s each (one per GPU); 400 Gb/s = 50 GB/s",
         bytes_per_s=50e9),
    Link(name="pcie4-x4", title="PCIe 4.0 x4 (one NVMe SSD)", cite="pcisig",
         source="PCI-SIG: PCIe 4.0 runs 16 GT/s per lane; 4 lanes = 8 GB/s each way, the ceiling of a drive on it",
         bytes_per_s=8e9),
)

#: Read-only mapping from a short name to its :class:`Link` record.
LINKS = MappingProxyType({link.name: link for link in _LINKS})


@dataclass(frozen=True, kw_only=True)
class Node:
    """A server of several GPUs: the memory beside them that can hold KV cache, and how it is reached.

    Parameters
    ----------
    name, title, cite, source : str
        As for :class:`Accelerator`.
    gpu : str
        Key of :data:`GPUS`.
    num_gpus : int
    host_memory_bytes, ssd_bytes : int
        CPU memory and local NVMe storage of the whole node (decimal units, as printed).
    host_link, ssd_link, network_link : str
        Keys of :data:`LINKS`: GPU to host memory, one drive, one GPU's network port.

    Book: chapter "Disaggregated prefill and decode".
    """

    name: str
    title: str
    cite: str
    source: str
    gpu: str  # key of GPUS
    num_gpus: int
    host_memory_bytes: int  # CPU DRAM of the node
    ssd_bytes: int  # local NVMe of the node
    host_link: str  # key of LINKS
    ssd_link: str  # key of LINKS
    network_link: str  # key of LINKS

    def __post_init__(self):
        for key in ("num_gpus", "host_memory_bytes", "ssd_bytes"):
            object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))
        if self.gpu not in GPUS:
            raise ValueError(f"gpu must be a key of GPUS {sorted(GPUS)}, got {self.gpu!r}")
        for key in ("host_link", "ssd_link", "network_link"):
            if getattr(self, key) not in LINKS:
                raise ValueError(f"{key} must be a key of LINKS {sorted(LINKS)}, got {getattr(self, key)!r}")


_NODES = (
    Node(name="dgx-h100", title="DGX H100", cite="nvidiadgxh100",
         source="DGX H100 datasheet: 8 H100 SXM, 2 TB system memory, 8 x 3.84 TB NVMe U.2 internal storage, "
                "8 single-port ConnectX-7 400 Gb/s",
         gpu="h100-sxm", num_gpus=8, host_memory_bytes=2 * 10**12, ssd_bytes=8 * 3_840 * 10**9,
         host_link="pcie5-x16", ssd_link="pcie4-x4", network_link="ib-ndr"),
)

#: Read-only mapping from a short name to its :class:`Node` record.
NODES = MappingProxyType({node.name: node for node in _NODES})
