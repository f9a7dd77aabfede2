"""Section gpu_kernels-occupancy-four-limits: resident blocks on the interview's SM (64 warps, 64K registers,
100 KB shared memory; cc 9.0's 32 block slots), recomputed from the guides' rules: registers per warp rounded up
to 256 (Best Practices, "Calculating Occupancy"), 1 KB of shared memory reserved per block and a 48 KB static
cap (Programming Guide, cc 9.0 Shared Memory), 32 resident blocks (Technical Specifications table)."""
import json
import pathlib

NB = pathlib.Path(__file__).parents[1] / "book" / "gpu_kernels.ipynb"
REGS, SMEM, WARPS, SLOTS = 65_536, 100 * 1024, 64, 32


def _fit(threads, regs, smem_kib):
    warps = -(-threads // 32)
    per_warp = -(-32 * regs // 256) * 256
    limits = (REGS // (warps * per_warp), SMEM // (smem_kib * 1024 + 1024), WARPS // warps, SLOTS)
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


def test_best_practices_example_and_shared_memory_caps():
    lines = _stored()
    assert "12 blocks by registers here" in lines[6] and REGS // (4 * 1280) == 12
    assert f"{REGS // (10 * 1280)} blocks by registers here, 4 in the guide" in lines[7]
    assert f"capped at {48 * 1024} B a block, got {64 * 1024}" in lines[8]
    assert lines[9].startswith(f"as dynamic shared memory: ({64 * 1024}, True)")
