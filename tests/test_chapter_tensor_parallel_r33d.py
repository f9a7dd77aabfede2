"""Section tensor_parallel-nic-affinity of "Tensor parallelism and the cache" (Mooncake issue 813).

One GPU's traffic over several RDMA NICs: a byte split in proportion to speed runs at min(PCIe, sum of the NICs'
rates); Mooncake's equal shares run at k times the slowest NIC. PCIe Gen5 x16 is 64 GB/s each way (32 GT/s x 16
lanes / 8), a 400 Gb/s port 50 GB/s; the path rates for NODE and SYS are the chapter's stated assumptions. The KV of
10,000 tokens of Llama 3 70B (80 layers, 8 KV heads of 128, bf16) is recomputed from its config, not through mha_kit.
"""
import chapter_outputs

PCIE = 32e9 * 16 / 8  # PCIe Gen5: 32 GT/s per lane, 16 lanes, raw bytes/s each way
NIC = 400e9 / 8  # one 400 Gb/s port
PATH = {"PIX": PCIE, "NODE": 8e9, "SYS": 4e9}  # the section's labelled assumptions
KV = 10_000 * 80 * 2 * 8 * 128 * 2  # Llama 3 70B config.json: 80 layers, 8 KV heads, head size 128; K and V; bf16
TP = 4  # 70B bf16 weights need several 80 GB GPUs; TP = 4 gives each rank 2 of the 8 KV heads
KV_GPU = KV / TP  # each GPU ships only its own heads over its own NIC
PCIE4 = 16e9 * 16 / 8  # PCIe Gen4: 16 GT/s per lane, 16 lanes, raw bytes/s each way
THREAD = ["PIX", "NODE", "NODE", "NODE"]  # mlx5_2 is PIX to GPU2, mlx5_0/3/4 are NODE (issue 813)


def nb():
    return chapter_outputs.notebook("tensor_parallel")


def rates(paths):
    return [min(NIC, PATH[p]) for p in paths]


def equal(paths):
    return min(PCIE, len(paths) * min(rates(paths)))


def proportional(paths):
    return min(PCIE, sum(rates(paths)))


def test_the_two_schedules_and_the_pcie_cap():
    assert (PCIE, NIC) == (64e9, 50e9) and KV == 3_276_800_000
    assert equal(["PIX"]) == proportional(["PIX"]) == 50e9
    assert equal(THREAD) == 32e9 < 50e9  # equal shares over far NICs lose to the near NIC alone: the thread's direction
    assert proportional(THREAD) == 64e9  # even a speed-aware split stops at the GPU's link
    assert equal(["PIX", "PIX"]) == 64e9  # two near NICs: PCIe-bound, not 100 GB/s
    assert equal(["PIX", "NODE", "SYS", "SYS"]) == 16e9
    out = chapter_outputs.printed(nb(), "def equal_shares")
    assert f"{KV:,} bytes (3.28 GB), 0.82 GB per GPU at TP = 4" in out
    assert KV_GPU == 819_200_000 and PCIE4 == 32e9 < 42e9  # a Gen4 x16 GPU could not have carried the measured 42 GB/s
    rows = {"mlx5_2 only (PIX)": ["PIX"], "the thread's 4: 1 PIX + 3 NODE": THREAD,
            "4 with 2 SYS: PIX, NODE, SYS, SYS": ["PIX", "NODE", "SYS", "SYS"], "2 PIX NICs": ["PIX", "PIX"]}
    for name, paths in rows.items():
        e, p = equal(paths), proportional(paths)
        assert f"{name:<36}{e / 1e9:>9.0f} GB/s{p / 1e9:>6.0f} GB/s{1e3 * KV_GPU / e:>12.1f} ms" in out


def test_glued_numbers():
    want = {"nic_kv_gb": f"{KV / 1e9:.2f}", "nic_pcie_ratio": f"{PCIE / NIC:.2f}",
            "nic_thread_equal": f"{equal(THREAD) / 1e9:.0f}", "nic_thread_speed": f"{proportional(THREAD) / 1e9:.0f}",
            "nic_line_share": f"{42e9 / NIC:.0%}", "nic_ms_pix": f"{1e3 * KV_GPU / 42e9:.0f}",
            "nic_ms_four": f"{1e3 * KV_GPU / 30e9:.0f}", "nic_tp": f"{TP}", "nic_kv_gpu_gb": f"{KV_GPU / 1e9:.2f}",
            "nic_pcie4_gbps": f"{PCIE4 / 1e9:.0f}", "nic_node_gbps": f"{PATH['NODE'] / 1e9:.0f}"}
    got = {k: chapter_outputs.glued(nb(), k) for k in want}
    assert got == want == {"nic_kv_gb": "3.28", "nic_pcie_ratio": "1.28", "nic_thread_equal": "32",
                           "nic_thread_speed": "64", "nic_line_share": "84%", "nic_ms_pix": "20",
                           "nic_ms_four": "27", "nic_tp": "4", "nic_kv_gpu_gb": "0.82", "nic_pcie4_gbps": "32",
                           "nic_node_gbps": "8"}
    assert 4 * PATH["NODE"] == equal(THREAD)  # the NODE assumption is what reproduces the measured ~30 GB/s


def test_section_cites_the_thread_and_the_code():
    sec = chapter_outputs.section(nb(), "tensor_parallel-nic-affinity", end="tensor_parallel-zero")
    for key in ("mooncake813{reply by alogfans, 2025-09-08, point 1}", "mooncake813{reply by alogfans, point 2}",
                "mooncake708{", "mooncaketopo{src/topology.cpp, getPciDistance, discoverCudaTopology",
                "mooncaketopo{src/transport/rdma_transport/rdma_context.cpp, RdmaContext::exportDmabuf;",
                "RdmaTransport::submitTransferTask, request_device_id}", "WITH_NVIDIA_PEERMEM=0", "PR #772",
                "mooncake-transfer-engine-non-cuda", "stages that traffic through host memory",
                "ncclgdrlevel{src/graph/paths.cc, ncclTopoCheckGdr", "gpudirectrdma{§1 Overview}", "nvsmitopolegend",
                "nvidiahopperarch{PCIe Gen 5"):
        assert key in sec
    for ref in ("tensor_parallel-rdma-registration", "moe_serving-rails", "tensor_parallel-cache-per-gpu"):
        assert f"{{ref}}`{ref}`" in sec
    assert "unless `WITH_NVIDIA_PEERMEM` is set" not in sec  # the default is peermem, not dma-buf
    assert "**assumptions**" in sec and "In the interview" in sec and ":class: dropdown" in sec
    # placed right after the registration section
    labels = [''.join(c["source"]).split("\n", 1)[0] for c in nb()["cells"] if c["cell_type"] == "markdown"
              and ''.join(c["source"]).startswith("(tensor_parallel-")]
    i = labels.index("(tensor_parallel-rdma-registration)=")
    assert labels[i + 1] == "(tensor_parallel-nic-affinity)="
