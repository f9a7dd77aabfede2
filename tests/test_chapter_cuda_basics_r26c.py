"""Section cuda_basics-thread-index-3d: the global linear index of a thread in a 3-D grid of 3-D blocks.

Recomputed with plain Python loops from the Programming Guide's thread ID (x + y*Dx + z*Dx*Dy, "Thread
Hierarchy"), warps as 32 consecutive thread IDs ("SIMT Architecture"), 32-byte sectors, and the
gridDim.x limit 2**31 - 1 with 1,024 threads per block, then compared with the chapter's stored outputs."""
import itertools

import chapter_outputs

NB = chapter_outputs.notebook("cuda_basics")
GRID, BLOCK = (3, 2, 2), (4, 4, 4)  # (x, y, z), as in the chapter's cell
SECTOR, FP32 = 32, 4


def _launch():
    """Yield (block, thread) coordinates in CUDA's order: z slowest, x fastest, block after block."""
    (gx, gy, gz), (dx, dy, dz) = GRID, BLOCK
    for bz, by, bx in itertools.product(range(gz), range(gy), range(gx)):
        for tz, ty, tx in itertools.product(range(dz), range(dy), range(dx)):
            yield (bx, by, bz), (tx, ty, tz)


def _linear(b, t):
    (gx, gy, _), (dx, dy, dz) = GRID, BLOCK
    return (b[0] + b[1] * gx + b[2] * gx * gy) * (dx * dy * dz) + t[0] + t[1] * dx + t[2] * dx * dy


def _per_dim(b, t):
    (gx, gy, _), (dx, dy, _) = GRID, BLOCK
    x, y, z = (b[i] * BLOCK[i] + t[i] for i in range(3))
    return x + y * (gx * dx) + z * (gx * dx) * (gy * dy)


def _worst_warp_sectors(indices):
    return max(len({FP32 * i // SECTOR for i in indices[w:w + 32]}) for w in range(0, len(indices), 32))


def _stored_lines(marker):
    return chapter_outputs.printed(NB, marker).strip().splitlines()


def test_linear_index_is_the_launch_order():
    ids = [_linear(b, t) for b, t in _launch()]
    assert ids == list(range(768))  # a permutation of 0..N-1, and +1 per step of threadIdx.x


def test_per_dimension_index_is_another_permutation():
    lin = [_linear(b, t) for b, t in _launch()]
    per = [_per_dim(b, t) for b, t in _launch()]
    assert sorted(per) == list(range(768))
    assert sum(p != q for p, q in zip(lin, per)) == 752


def test_the_chapters_printed_linear_form():
    lines = _stored_lines("global_id = block_id *")
    assert lines[0] == ("grid (3, 2, 2) x block (4, 4, 4): N = 768 threads; permutation of 0..N-1: True; "
                        "increases by 1 along threadIdx.x, then y, z and the blocks: True")
    b, t = (1, 1, 1), (3, 2, 1)
    assert _linear(b, t) == 667  # block 1 + 1*3 + 1*6 = 10, times 64, plus 3 + 2*4 + 1*16 = 27
    assert lines[1] == "thread (3, 2, 1) of block (1, 1, 1): block 10, global 667 (kit: 667)"
    sectors = _worst_warp_sectors([_linear(b, t) for b, t in _launch()])
    assert sectors == 4
    assert lines[2] == f"worst warp reading fp32 x[global]: {sectors} sectors of 32 B for 128 useful bytes"


def test_the_chapters_printed_per_dimension_form():
    lines = _stored_lines("flat = X + Y * nx")
    assert lines[0] == ("array 8 x 8 x 12 (z, y, x): permutation of 0..N-1: True; equals np.ravel_multi_index: True; "
                        "threads whose index differs from the linear form: 752 of 768")
    sectors = _worst_warp_sectors([_per_dim(b, t) for b, t in _launch()])
    assert sectors == 8  # blockDim.x = 4: eight 16-byte runs, each in its own sector
    assert lines[1] == f"worst warp reading fp32 x[flat]: {sectors} sectors of 32 B for 128 useful bytes (blockDim.x = 4; linear form: 4)"
    assert lines[2] == "largest 1-D launch: 2,199,023,254,528 threads, 1,024x INT_MAX (2,147,483,647)"
    assert (2**31 - 1) * 1024 == 2_199_023_254_528


def test_the_block_rank_and_the_largest_launch_need_64_bits():
    max_blocks = (2**31 - 1) * 65_535 * 65_535  # gridDim.x, .y, .z limits
    assert max_blocks > 2**32 and max_blocks < 2**63  # wraps an unsigned block rank; fits size_t
    assert max_blocks * 1024 > 2**64  # the whole launch does not, hence "any buffer that fits in memory"
    lines = _stored_lines("flat = X + Y * nx")
    assert lines[3] == (f"largest grid: {max_blocks:.2e} blocks (> 2**32: True); "
                        f"with 1,024 threads each {max_blocks * 1024:.2e} threads (> 2**64: True)")
    assert lines[3].startswith("largest grid: 9.22e+18 blocks")
    src = "".join("".join(c["source"]) for c in NB["cells"])
    assert "(size_t)blockIdx.y * gridDim.x" in src and "unsigned block " not in src
