"""Section serving_reliability-gpu-scheduling (r50gpus): GPU scheduling against CPU scheduling in a cluster.

The numbers are recomputed here from the primary constants, not by the chapter's code: the packing of sixteen jobs
onto 8-GPU nodes (a free-slot count per node, first fit and best fit by hand, the small-job pool and the sorted
order), the lower bound, the GPUs and whole nodes left free once the 1- and 2-GPU jobs end, and the time to copy
one full H100 (80 GB, NVIDIA's datasheet) over PCIe Gen5 x16 (64 GB/s each way, the H100 whitepaper).
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("serving_reliability")
LABEL = "serving_reliability-gpu-scheduling"

NODE = 8  # GPUs per HGX/DGX H100 node (DGX H100 datasheet)
JOBS = (4, 2, 4, 1, 4, 2, 4, 1, 8, 2, 4, 1, 4, 2, 8, 1)  # the section's arrival order
H100_HBM = 80e9  # bytes (H100 SXM datasheet)
PCIE5_X16 = 64e9  # bytes/s each way (H100 whitepaper: 128 GB/s total)


def _pack(order, pick, pool_of=lambda size: 0):
    """Free slots per node and the pool each node serves; ``pick`` chooses among the candidate node indices."""
    free, pools, sizes = [], [], []
    for size in order:
        cands = [i for i in range(len(free)) if free[i] >= size and pools[i] == pool_of(size)]
        if cands:
            i = pick(cands, free)
        else:
            free.append(NODE), pools.append(pool_of(size)), sizes.append([])
            i = len(free) - 1
        free[i] -= size
        sizes[i].append(size)
    return sizes


def _after_short(nodes):
    free = [NODE - sum(s for s in node if s >= 4) for node in nodes]
    return sum(free), sum(f == NODE for f in free)


EXPECTED = {  # glue key -> nodes
    "ff": _pack(JOBS, lambda c, free: c[0]),
    "bf": _pack(JOBS, lambda c, free: min(c, key=lambda i: free[i])),
    "apart": _pack(JOBS, lambda c, free: c[0], pool_of=lambda size: size <= 2),
    "ffd": _pack(sorted(JOBS, reverse=True), lambda c, free: c[0]),
}


def test_packing_numbers():
    bound = math.ceil(sum(JOBS) / NODE)
    assert (sum(JOBS), bound) == (52, 7)
    assert chapter_outputs.glued(NB, "sr_gs_bound") == str(bound)
    for key, nodes in EXPECTED.items():
        assert len(nodes) == bound, key  # every policy meets the bound for sizes that divide the node
        free, whole = _after_short(nodes)
        assert chapter_outputs.glued(NB, f"sr_gs_nodes_{key}") == str(len(nodes))
        assert chapter_outputs.glued(NB, f"sr_gs_free_{key}") == str(free) == "16"
        assert chapter_outputs.glued(NB, f"sr_gs_whole_{key}") == str(whole)
    assert [_after_short(EXPECTED[k])[1] for k in ("ff", "bf", "apart", "ffd")] == [0, 0, 2, 2]


def test_printed_table():
    lines = chapter_outputs.printed(NB, "NODE_GPUS = 8").splitlines()
    assert lines[0] == "16 jobs, 52 GPUs: at least 7 nodes of 8"
    rows = {line[:31].strip(): line[31:].split() for line in lines[2:6]}
    assert rows == {"first fit": ["7", "16", "0"], "best fit": ["7", "16", "0"],
                    "first fit, small jobs apart": ["7", "16", "2"], "first fit decreasing (offline)": ["7", "16", "2"]}


def test_spread_on_fixed_cluster():
    """Each job on the emptiest of ceil(52/8) = 7 fixed nodes (spreading): both 8-GPU jobs find no whole node."""
    free, pending = [NODE] * 7, []
    for size in JOBS:
        cands = [i for i in range(7) if free[i] >= size]
        if not cands:
            pending.append(size)
            continue
        i = max(cands, key=lambda i: free[i])
        free[i] -= size
    assert pending == [8, 8] and sum(free) == 20
    assert chapter_outputs.glued(NB, "sr_gs_spread_pending") == str(len(pending))
    assert chapter_outputs.glued(NB, "sr_gs_spread_pending_gpus") == str(sum(pending))
    assert chapter_outputs.glued(NB, "sr_gs_spread_idle") == str(sum(free))
    assert chapter_outputs.glued(NB, "sr_gs_cluster_gpus") == str(7 * NODE)
    assert chapter_outputs.glued(NB, "sr_gs_jobs_gpus") == str(sum(JOBS))
    assert chapter_outputs.glued(NB, "sr_gs_kueue_timeout_min") == "30"  # Kueue docs: waitForPodsReady.timeout
    # best fit on the same seven nodes places every job
    assert len(EXPECTED["bf"]) == 7
    assert "spread (emptiest node first) on 7 fixed nodes: 2 jobs Pending, sizes [8, 8], with 20 GPUs free" in (
        chapter_outputs.printed(NB, "NODE_GPUS = 8"))


def test_swap_time():
    swap = H100_HBM / PCIE5_X16
    assert swap == 1.25
    assert chapter_outputs.glued(NB, "sr_gs_swap_s") == f"{swap:.2f}"
    assert chapter_outputs.glued(NB, "sr_gs_node_gb") == str(round(NODE * H100_HBM / 1e9))


def test_section_text():
    text = chapter_outputs.section(NB, LABEL, end="serving_reliability-kernel-rollout")
    assert '**[M] "How does GPU scheduling differ from ordinary CPU scheduling?"**' in text
    for word in ("extended resource", "cannot be overcommitted", "`1m`", "time-slicing", "MPS", "cuda-checkpoint",
                 "Topology Manager", "single-numa-node", "Dynamic Resource Allocation", "waitForPodsReady",
                 "LeaderWorkerSet", "Volcano", "minCount", "fragmentation", "NUMA", "NIC", "blockAdmission",
                 "admits by quota", "MostAllocated", "GenericWorkload", "opt-in"):
        assert word in text, word
    known = chapter_outputs.book_labels()
    for ref in ("multi_tenant_serving-gpu-sharing", "scheduler_design-preemption", "scheduler_design-preempt-offload",
                "serving_reliability-drain", "serving_reliability-spot", "serving_reliability-kubernetes-deploy",
                "moe_serving-imex", "tensor_parallel-nic-affinity", "serving_reliability-grey-failures",
                "deployment_plan-fleet", "multi_tenant_serving-tenancy-design"):
        assert f"{{ref}}`{ref}`" in text and ref in known, ref
    chapter_outputs.assert_cited(text, ["k8sresources", "k8sschedulegpus", "nvidiak8sdeviceplugin", "cudacheckpoint",
                                        "k8stopologymanager", "k8sdra", "nvidiadracd", "kueuegang", "lwsreadme",
                                        "k8sgangscheduling", "kubeflowvolcano", "nvidiadgxh100", "nvidiahopperarch",
                                        "k8sbinpacking", "kep964binpacking"])
    assert "With a gang scheduler (Kueue" not in text  # Kueue admits by quota; it does not gang-bind
    assert text.count("```{admonition} In the interview") == 1
    assert text.count(":class: dropdown\n") == 1
