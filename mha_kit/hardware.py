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
    registers_per_sm, shared_bytes_per_sm, max_warps_per_sm, max_blocks_per_sm : int, optional
        What one SM offers the thread blocks resident on it: 32-bit registers, the largest
        shared-memory carve-out in bytes, resident warps, and resident thread blocks whatever their
        size (chapter "Attention kernels on the GPU").
    fp32_flops : float, optional
        Datasheet FP32 FLOP/s on the ordinary (non-tensor) cores.
    fp32_lanes_per_sm, tensor_flops_per_clock_per_sm, sfu_per_sm : int, optional
        Per SM and per clock: FP32 fused multiply-add lanes, dense bf16 tensor-core FLOPs, and results
        of the special-function (MUFU) unit (exp2, sin, rsqrt, ...).
    l1_shared_bytes_per_sm, l2_bytes, tensor_memory_bytes_per_sm, smem_bytes_per_clock_per_sm : int, optional
        The combined L1/shared-memory array of one SM, the chip's L2 cache, Blackwell's tensor memory
        per SM, and the bytes per clock one SM's shared memory delivers (32 banks of 4 bytes).

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
    max_blocks_per_sm: int | None = None  # resident thread blocks per SM
    fp32_flops: float | None = None  # FP32 FLOP/s on the non-tensor cores
    fp32_lanes_per_sm: int | None = None  # FP32 FMA lanes per SM
    tensor_flops_per_clock_per_sm: int | None = None  # dense bf16 tensor-core FLOPs per clock per SM
    sfu_per_sm: int | None = None  # special-function (MUFU) results per clock per SM
    l1_shared_bytes_per_sm: int | None = None  # combined L1 / shared-memory array per SM, bytes
    l2_bytes: int | None = None  # L2 cache of the chip, bytes
    tensor_memory_bytes_per_sm: int | None = None  # Blackwell tensor memory per SM, bytes
    smem_bytes_per_clock_per_sm: int | None = None  # shared-memory bandwidth per SM per clock

    _OPTIONAL_INTS = ("sram_bytes_per_sm", "num_sms", "registers_per_sm", "shared_bytes_per_sm",
                      "max_warps_per_sm", "max_blocks_per_sm", "fp32_lanes_per_sm", "tensor_flops_per_clock_per_sm", "sfu_per_sm",
                      "l1_shared_bytes_per_sm", "l2_bytes", "tensor_memory_bytes_per_sm",
                      "smem_bytes_per_clock_per_sm")

    def __post_init__(self):
        for key in ("hbm_bandwidth", "bf16_flops", "fp32_flops"):
            value = getattr(self, key)
            if value is None and key == "fp32_flops":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{key} must be a positive number, got {value!r}")
        object.__setattr__(self, "hbm_bytes", check_positive_int("hbm_bytes", self.hbm_bytes))
        for key in self._OPTIONAL_INTS:
            if getattr(self, key) is not None:
                object.__setattr__(self, key, check_positive_int(key, getattr(self, key)))

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte at which the chip turns from memory-bound to compute-bound."""
        return self.bf16_flops / self.hbm_bandwidth


_RECORDS = (
    # The FlashAttention paper (sec. 2.1) describes the A100's SRAM: 192 KB per SM, 108 SMs.
    # Per-SM rates from the Ampere whitepaper: 64 FP32 cores and four tensor cores of 256 dense FP16 FMA per
    # clock each (1,024 FMA = 2,048 FLOPs per clock per SM); the datasheet's FP32 peak is 19.5 TFLOPS.
    Accelerator(name="a100-40gb", title="A100 40GB SXM", cite="nvidiaa100,dao2022flashattention,nvidiaamperewhitepaper",
                source="NVIDIA A100 datasheet (40 GB and 1,555 GB/s HBM2, 312 TFLOPS bf16 dense, 19.5 TFLOPS FP32); "
                       "arXiv:2205.14135 sec. 2.1 (192 KB SRAM per SM, 108 SMs); NVIDIA A100 Tensor Core GPU "
                       "Architecture whitepaper (64 FP32 cores and 1,024 dense FP16 FMA per clock per SM)",
                hbm_bandwidth=1.555e12, bf16_flops=312e12, hbm_bytes=40 * 10**9, sram_bytes_per_sm=192 * 1024, num_sms=108,
                fp32_flops=19.5e12, fp32_lanes_per_sm=64, tensor_flops_per_clock_per_sm=2 * 1024),
    # The 80 GB part has the same chip and peak; only its HBM2e is larger and faster.
    Accelerator(name="a100-80gb", title="A100 80GB SXM", cite="nvidiaa100",
                source="NVIDIA A100 datasheet (80 GB and 2,039 GB/s HBM2e, 312 TFLOPS bf16 dense)",
                hbm_bandwidth=2.039e12, bf16_flops=312e12, hbm_bytes=80 * 10**9, sram_bytes_per_sm=192 * 1024, num_sms=108),
    # The SM count is the architecture whitepaper's (H100 SXM5: 132 SMs); the datasheet does not give it.
    # The per-SM limits are compute capability 9.0's, from the Hopper Tuning Guide, sec. 1.4.1.1
    # (Occupancy): 64K 32-bit registers, 64 resident warps, up to 228 KB of shared memory per SM.
    # The rest: 128 FP32 lanes, four tensor cores with twice an A100 SM's MMA rate clock for clock
    # (2 x 2,048 = 4,096 dense bf16 FLOPs per clock per SM), 256 KB of combined L1 and shared memory per SM
    # and 50 MB of L2 (whitepaper); 16 special-function results per clock per SM and 32 four-byte shared-memory
    # banks, each serving one access per clock (CUDA C++ Programming Guide, cc 9.0). At most 32 resident blocks
    # per SM (CUDA C++ Programming Guide, Table "Technical Specifications per Compute Capability", cc 9.0).
    Accelerator(name="h100-sxm", title="H100 SXM", cite="nvidiah100,nvidiahopperwhitepaper,nvidiahoppertuning,cudaguide",
                source="NVIDIA H100 datasheet (80 GB and 3.35 TB/s HBM3, 989 TFLOPS bf16 dense, 67 TFLOPS FP32); "
                       "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 SMs; per SM 128 FP32 "
                       "cores, 4 tensor cores at 2x the A100 SM's MMA rate, 256 KB L1/shared; 50 MB L2); "
                       "Hopper Tuning Guide sec. 1.4.1.1 (64K registers, 64 warps, 228 KB shared memory per SM); "
                       "CUDA C++ Programming Guide (16 MUFU results/clock/SM; 32 banks x 4 B per clock; "
                       "32 resident blocks per SM)",
                hbm_bandwidth=3.35e12, bf16_flops=989e12, hbm_bytes=80 * 10**9, num_sms=132,
                registers_per_sm=65_536, shared_bytes_per_sm=228 * 1024, max_warps_per_sm=64, max_blocks_per_sm=32,
                fp32_flops=67e12, fp32_lanes_per_sm=128, tensor_flops_per_clock_per_sm=4 * 1024, sfu_per_sm=16,
                l1_shared_bytes_per_sm=256 * 1024, l2_bytes=50 * 1024**2, smem_bytes_per_clock_per_sm=32 * 4),
    Accelerator(name="h200-sxm", title="H200 SXM", cite="nvidiah200",
                source="NVIDIA H200 datasheet (141 GB and 4.8 TB/s HBM3e, 989 TFLOPS bf16 dense)",
                hbm_bandwidth=4.8e12, bf16_flops=989e12, hbm_bytes=141 * 10**9),
    # One B200 of an HGX B200 board. NVIDIA prints the tensor rates with 2:4 sparsity (4.5 PFLOPS bf16), so the
    # dense rate is half. The SM count and clock are not on the page, so only per-SM facts from the CUDA guide
    # (compute capability 10.0) and the PTX ISA (tensor memory: 128 lanes x 512 columns x 4 bytes) are here.
    # The tensor rate per SM is twice Hopper's, 2 x 4,096 = 8,192 dense bf16 FLOPs a clock (FlashAttention-4
    # paper, sec. 2: per SM the tensor cores double while the 16 exponentials a clock stay as they were).
    Accelerator(name="b200-hgx", title="B200 (HGX)",
                cite="nvidiahgxb200,cudaguide,ptxisa,flashattention4blog,zadouri2026flashattention4",
                source="NVIDIA HGX B200 specifications, per GPU (180 GB HBM3e at 7.7 TB/s, FP16/BF16 tensor "
                       "4.5 PFLOPS with sparsity = 2.25 dense, FP32 75 TFLOPS); CUDA C++ Programming Guide, cc 10.0 "
                       "(64K registers, 64 warps, 32 resident blocks, 228 KB shared memory, 128 FP32 lanes and 16 MUFU "
                       "results per clock per SM); PTX ISA, tensor memory (256 KB per SM); FlashAttention-4 blog (SFU count and "
                       "shared-memory bandwidth unchanged from H100); FlashAttention-4 paper sec. 2 (per SM, "
                       "twice Hopper's tensor rate: 8,192 dense bf16 FLOPs per clock)",
                hbm_bandwidth=7.7e12, bf16_flops=2.25e15, hbm_bytes=180 * 10**9,
                registers_per_sm=65_536, shared_bytes_per_sm=228 * 1024, max_warps_per_sm=64, max_blocks_per_sm=32,
                fp32_flops=75e12, fp32_lanes_per_sm=128, tensor_flops_per_clock_per_sm=2 * 4 * 1024, sfu_per_sm=16,
                tensor_memory_bytes_per_sm=256 * 1024, smem_bytes_per_clock_per_sm=32 * 4),
)

#: Read-only mapping from a short name to its :class:`Accelerator` record.
GPUS = MappingProxyType({gpu.name: gpu for gpu in _RECORDS})

#: Consumer cards, for the "A100 against H100 against RTX 4090" comparison: not in :data:`GPUS`, which holds the
#: data-centre parts (HBM, NVLink) that the planner and the chapters' HBM tables list.
CONSUMER_GPUS = MappingProxyType({gpu.name: gpu for gpu in (
    # Its memory is GDDR6X, not HBM: the field is named for the data-centre parts. The whitepaper prints every
    # tensor rate as dense/sparse and gives two FP16 rows; the bf16 row (FP32 accumulate, the one training and
    # serving use) is 165.2/330.4, half the FP16-accumulate rate (330.3/660.6). The dense figure is recorded here.
    Accelerator(name="rtx-4090", title="GeForce RTX 4090", cite="nvidiaadawhitepaper",
                source="NVIDIA Ada GPU Architecture whitepaper, Appendix A, Table 2 (GeForce RTX 4090: 128 SMs, "
                       "24 GB GDDR6X, 1008 GB/sec, L2 73,728 KB, Peak BF16 Tensor TFLOPS with FP32 Accumulate "
                       "165.2/330.4, dense/sparse)",
                hbm_bandwidth=1.008e12, bf16_flops=165.2e12, hbm_bytes=24 * 10**9, num_sms=128,
                l2_bytes=73_728 * 1024),
)})


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
    # Fifth-generation NVLink: 18 links per Blackwell GPU, 1.8 TB/s counted both ways (MLPerf Inference v6.0 system
    # descriptions of HGX B200: "18x 5th Gen NVLink, 14.4 TB/s aggregated" over 8 GPUs), so 900 GB/s each way.
    # A GB200 NVL72 rack joins 72 such GPUs in one NVLink domain (130 TB/s, NVIDIA's GB200 NVL72 page).
    Link(name="nvlink5", title="NVLink 5 (B200)", cite="nvidiahgxb200,nvidiagb200nvl72",
         source="HGX B200 / GB200 NVL72 specifications: fifth-generation NVLink, 1.8 TB/s total per GPU "
                "(18 links), so 900 GB/s each way; NVL72: 72 GPUs in one NVLink domain, 130 TB/s in all",
         bytes_per_s=900e9),
    Link(name="nvlink3", title="NVLink 3 (A100 SXM)", cite="nvidiaa100",
         source="A100 datasheet: NVLink 600 GB/s a GPU (SXM), counted both ways, so 300 GB/s each way",
         bytes_per_s=300e9),
    # NVIDIA publishes no H800 datasheet page; DeepSeek's hardware paper gives the cut link rate of its H800 nodes.
    Link(name="nvlink-h800", title="NVLink on the H800 SXM", cite="zhao2025insights",
         source="Insights into DeepSeek-V3 (ISCA 2025), sec. 4.1: the NVLink bandwidth in H800 SXM nodes is "
                "reduced from 900 GB/s to 400 GB/s (both ways), so 200 GB/s each way",
         bytes_per_s=200e9),
    Link(name="pcie5-x16", title="PCIe Gen5 x16", cite="nvidiahopperarch,pcisig",
         source="H100 whitepaper: PCIe Gen5 128 GB/s total, 64 GB/s in each direction (32 GT/s x 16 lanes)",
         bytes_per_s=64e9),
    Link(name="ib-ndr", title="InfiniBand NDR, one 400 Gb/s port", cite="nvidiadgxh100",
         source="DGX H100 datasheet: 8 single-port ConnectX-7, up to 400 Gb/s each (one per GPU); 400 Gb/s = 50 GB/s",
         bytes_per_s=50e9),
    Link(name="pcie4-x16", title="PCIe 4.0 x16 (a PCIe card: the L40S)", cite="pcisig,nvidial40s",
         source="PCI-SIG: PCIe 4.0 runs 16 GT/s per lane; 16 lanes = 32 GB/s each way, the raw rate before "
                "128b/130b encoding (31.5 GB/s after); the L40S datasheet's 64 GB/s counts both ways",
         bytes_per_s=32e9),
    Link(name="pcie4-x4", title="PCIe 4.0 x4 (one NVMe SSD)", cite="pcisig",
         source="PCI-SIG: PCIe 4.0 runs 16 GT/s per lane; 4 lanes = 8 GB/s each way, the ceiling of a drive on it",
         bytes_per_s=8e9),
)

#: Read-only mapping from a short name to its :class:`Link` record.
LINKS = MappingProxyType({link.name: link for link in _LINKS})

#: What DeepSeek's H800 cluster gave its all-to-all kernels, bytes/s (DeepSeek-V3 report, sec. 3.2.2:
#: "NVLink offers a bandwidth of 160 GB/s, roughly 3.2 times that of IB (50 GB/s)"). These are the report's
#: working figures, not a datasheet's; the report does not say whether they count one direction or both.
DEEPSEEK_V3_H800_LINKS = MappingProxyType({"nvlink": 160e9, "ib": 50e9})


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
