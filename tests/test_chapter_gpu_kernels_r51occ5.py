"""Section gpu_kernels-occupancy-four-limits: resident blocks on the interview's SM (64 warps, 64K registers,
100 KB shared memory; cc 9.0's 32 block slots), recomputed from the guides' rules: registers per warp rounded up
to 256 (Best Practices, "Calculating Occupancy") and allocated per sub-partition, a quarter of the file
(cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit), 1 KB of shared memory reserved per block and a 48 KB static
cap (Programming Guide, cc 9.0 Shared Memory), 32 resident blocks (Technical Specifications table)."""
import ast
import json
import pathlib

NB = pathlib.Path(__file__).parents[1] / "book" / "gpu_kernels.ipynb"
REGS, SMEM, WARPS, SLOTS = 65_536, 100 * 1024, 64, 32


def _fit(threads, regs, smem_kib):
    warps = -(-threads // 32)
    per_warp = -(-32 * regs // 256) * 256
    limits = (4 * (REGS // 4 // per_warp) // warps, SMEM // (smem_kib * 1024 + 1024), WARPS // warps, SLOTS)
    blocks = min(limits)
    return limits, blocks, blocks * warps


def _stored():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and "gk_occ4_blocks" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").splitlines()


def test_rows_match_the_four_limits():
    rows = {"as asked": (256, 64, 16), "65 registers": (256, 65, 16), "32 registers": (256, 32, 16),
            "32 registers, 11 KiB": (256, 32, 11), "32-thread blocks": (32, 32, 0)}
    lines = {line[:20].strip(): line[20:].split() for line in _stored()[1:6]}
    for name, args in rows.items():
        limits, blocks, warps = _fit(*args)
        cols = lines[name]
        assert tuple(int(c) for c in cols[:4]) == limits
        assert (int(cols[5].rstrip(",")), int(cols[6].rstrip(","))) == (blocks, warps)
        assert cols[7] == f"{100 * warps / WARPS:.1f}%,"


def test_the_asked_kernel_is_register_bound_at_half_occupancy():
    limits, blocks, warps = _fit(256, 64, 16)
    assert limits == (4, 5, 8, 32) and (blocks, warps) == (4, 32)
    assert _stored()[1].endswith("registers")
    assert _fit(32, 32, 0)[1:] == (32, 32) and _stored()[5].endswith("blocks")  # the block cap binds


def _glued(key):
    nb = json.loads(NB.read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == key:
                return ast.literal_eval(data["application/papermill.record/text/plain"])
    raise KeyError(key)


def test_best_practices_example_and_shared_memory_caps():
    lines = _stored()
    # 37 registers a thread: 1,184 -> 1,280 a warp; a quarter of the file holds 16,384 // 1,280 = 12 warps.
    quarter, warp_regs = REGS // 4, -(-37 * 32 // 256) * 256
    assert (quarter, warp_regs, quarter // warp_regs) == (16_384, 1280, 12)
    assert f"{4 * (quarter // warp_regs) // 4} blocks by registers here ({REGS // (4 * warp_regs)} dividing" in lines[6]
    assert lines[6].endswith("12 in the guide")
    assert f"{4 * (quarter // warp_regs) // 10} blocks by registers here ({REGS // (10 * warp_regs)} dividing" in lines[7]
    assert lines[7].endswith("4 in the guide") and 4 * (quarter // warp_regs) // 10 == 4 != REGS // (10 * warp_regs)
    assert f"capped at {48 * 1024} B a block, got {64 * 1024}" in lines[8]
    assert lines[9].startswith(f"as dynamic shared memory: ({64 * 1024}, True)")


def test_glued_sub_partition_and_launch_bounds_numbers():
    expected = {"gk_occ4_part_regs": f"{REGS // 4:,}", "gk_occ4_warp_regs37": f"{1280:,}",
                "gk_occ4_part_warps": str(16_384 // 1280), "gk_occ4_sm_warps37": str(4 * (16_384 // 1280)),
                "gk_occ4_320_whole": str(REGS // (10 * 1280)), "gk_occ4_320_part": str(4 * 12 // 10),
                "gk_occ4_320_warps": str(320 // 32), "gk_occ4_lb_regs": str(REGS // (8 * 256))}
    for key, value in expected.items():
        assert _glued(key) == value, key
    assert expected["gk_occ4_320_part"] == "4" and expected["gk_occ4_lb_regs"] == "32"
