"""tensor_parallel-alltoall-p2p: all-to-all from send/recv. Recomputes the rounds and blocks of pairwise exchange
and Bruck's algorithm from their definitions (MPICH's alltoall_intra_pairwise.c and alltoall_intra_brucks.c), the
alpha-beta times with NCCL 2.30.7's NVLink Simple step constant and NVLink 4's rate, and MPICH's and Open MPI's
algorithm choices from their rule files, and compares them with the chapter's stored outputs."""
import math
import re

import pytest

import chapter_outputs

ALPHA = 3.4e-6  # s: NCCL src/graph/tuning.cc hwLat[NVLINK][RING][SIMPLE]
BETA = 450e9  # bytes/s: H100 NVLink 4, 900 GB/s both ways


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("tensor_parallel")


def _bruck_blocks(R):
    """Blocks one rank sends in Bruck: round k carries the blocks 1..R-1 whose bit k is set."""
    return sum(len([b for b in range(1, R) if (b >> k) & 1]) for k in range(math.ceil(math.log2(R))))


def _bruck_by_messages(R):
    """Bruck as explicit messages between ranks (dicts of block -> value), to check the result independently."""
    held = [{(b - r) % R: (r, b) for b in range(R)} for r in range(R)]  # slot s of rank r: its block (r + s) mod R
    k = 1
    while k < R:
        msgs = [{s: held[r][s] for s in held[r] if s & k} for r in range(R)]
        for r in range(R):
            held[(r + k) % R].update(msgs[r])
        k *= 2
    # after the rounds, slot s of rank r holds the block sent by rank (r - s) mod R to rank r
    return [[held[j][(j - i) % R] for i in range(R)] for j in range(R)]


@pytest.mark.parametrize("R", [4, 5, 8])
def test_simulation_table(nb, R):
    out = chapter_outputs.printed(nb, "def a2a_bruck(x)")
    assert _bruck_by_messages(R) == [[(i, j) for i in range(R)] for j in range(R)]  # rank j: block j of each i
    for name, rounds, blocks in (("pairwise", R - 1, R - 1), ("Bruck", math.ceil(math.log2(R)), _bruck_blocks(R))):
        assert re.search(rf"^\s*{R}\s+{name}\s+{rounds}\s+{blocks}\s+True$", out, re.M), (R, name)
    assert "rank 0 after the all-to-all (R = 5): [0, 100, 200, 300, 400]" in out


def test_bruck_bytes_formula():
    for R in (2, 4, 8, 16, 64):  # MPICH: (n/2) lg p with n = R m, power-of-two p
        assert _bruck_blocks(R) == R // 2 * int(math.log2(R))
    assert _bruck_blocks(8) == 12 and _bruck_blocks(5) == 5


def test_cost_table_and_glue(nb):
    out = chapter_outputs.printed(nb, "def a2a_cost(R)")
    for R in (4, 5, 8, 16, 64):
        br, bb = math.ceil(math.log2(R)), _bruck_blocks(R)
        ratio = (R - 1 - br) / (bb - (R - 1))
        assert re.search(rf"^\s*{R}\s+{R - 1}\s+{R - 1}\s+{br}\s+{bb}\s+{ratio:.2f} alpha\*beta$", out, re.M), R
    assert f"alpha*beta = {ALPHA * BETA / 1e6:.2f} MB" in out and "1.53 MB" in out
    for m in (8, 256, 32768, 1 << 20, 16 << 20):
        t_pw, t_br = 7 * ALPHA + 7 * m / BETA, 3 * ALPHA + 12 * m / BETA
        assert re.search(rf"^\s*{m}\s+\S+ \S+\s+\S+ \S+\s+{1e6 * t_pw:.1f}\s+{1e6 * t_br:.1f}$", out, re.M), m
    g = lambda k: chapter_outputs.glued(nb, k)  # noqa: E731
    assert (g("tpa2a_pw8_rounds"), g("tpa2a_br8_rounds"), g("tpa2a_br8_blocks"), g("tpa2a_br5_blocks")) == ("7", "3", "12", "5")
    assert g("tpa2a_mstar8") == f"{(7 - 3) / (12 - 7):.1f}" == "0.8"
    assert g("tpa2a_mstar64") == f"{(63 - 6) / (192 - 63):.2f}" == "0.44"
    assert g("tpa2a_mstar8_mb") == f"{0.8 * ALPHA * BETA / 1e6:.1f}" == "1.2"
    assert g("tpa2a_pw8_8b_us") == "23.8" and g("tpa2a_br8_8b_us") == "10.2"


MPICH_RULES = [(256, "Bruck"), (32768, "scattered"), (math.inf, "pairwise")]  # generic.json, 8+ ranks, <= limit
OMPI_8_15 = [(262144, "linear_sync"), (math.inf, "linear")]  # coll_tuned_decision_fixed.c, < limit
OMPI_64_127 = [(1024, "modified_bruck"), (2048, "linear"), (4096, "linear_sync"), (262144, "linear"),
               (math.inf, "pairwise")]


def test_library_choices(nb):
    out = chapter_outputs.printed(nb, "def mpich_alltoall(R, m)")
    for R, m, size in ((8, 8, "8 B"), (8, 32768, "32 KiB"), (8, 1 << 20, "1 MiB"), (64, 256, "256 B"),
                       (64, 1 << 20, "1 MiB")):
        mpich = next(a for lim, a in MPICH_RULES if m <= lim)
        ompi = next(a for lim, a in (OMPI_8_15 if R < 16 else OMPI_64_127) if m < lim)
        assert re.search(rf"^\s*{R}\s+{size}\s+{mpich}\s+{ompi}$", out, re.M), (R, m)


def test_section_links_citations_and_boxes(nb):
    text = chapter_outputs.section(nb, "tensor_parallel-alltoall-p2p", end="tensor_parallel-cutting-comm")
    for ref in ("tensor_parallel-collectives", "tensor_parallel-ring-tree", "tensor_parallel-ring-steps",
                "tensor_parallel-ep-layouts", "moe_serving-dispatch-latency"):
        assert "{ref}`" + ref + "`" in text and ref in chapter_outputs.book_labels(), ref
    chapter_outputs.assert_cited(text, ["mpichalltoall", "ompialltoall", "ncclalltoallp2p", "snir1996mpibuffering"])
    assert "In the interview" in text and text.count(":class: dropdown") == 2
    for setting in ("mpi4py 3.1.5", "NCCL 2.30.7", "8 processes"):
        assert setting in text, setting


def _ascending_loop_steps(R):
    """Pair (i, j) of the `for dst in range(R): Sendrecv(dst)` loop finishes one step after both ranks finished
    their previous partner; both previous pairs have a smaller i + j, so fill the table in order of i + j."""
    done = {}
    for i, j in sorted(((i, j) for i in range(R) for j in range(i + 1, R)), key=lambda p: p[0] + p[1]):
        prev_i = max((done[tuple(sorted((i, k)))] for k in range(j) if k != i), default=0)
        prev_j = max((done[tuple(sorted((j, k)))] for k in range(i) if k != j), default=0)
        done[i, j] = 1 + max(prev_i, prev_j)
    return max(done.values())


def test_ascending_loop_and_allreduce_steps(nb):
    out = chapter_outputs.printed(nb, "def naive_loop_steps(R)")
    for R in (4, 5, 8, 16):
        assert _ascending_loop_steps(R) == 2 * R - 3
        assert re.search(rf"^\s*{R}\s+{2 * R - 3}\s+{R - 1}$", out, re.M), R
    g = lambda k: chapter_outputs.glued(nb, k)  # noqa: E731
    assert g("tpa2a_naive8_steps") == "13" and g("tpa2a_pa2_m") == "8"
    # MPICH generic.json allreduce: 100 int64 = 800 B > 8 B, built-in MPI.MIN, count 100 >= pof2 8 -> RS + AG
    assert "100 elements, 800 bytes, MPICH runs reduce_scatter_allgather" in out and g("tpar_pa2_bytes") == "800"
    assert (g("tpar_rsag8_steps"), g("tpar_ring8_steps"), g("tpar_root8_steps")) == (
        str(2 * 3), str(2 * 7), str(2 * 7))


def test_new_citations(nb):
    text = chapter_outputs.section(nb, "tensor_parallel-alltoall-p2p", end="tensor_parallel-cutting-comm")
    chapter_outputs.assert_cited(text, ["cse234pa2", "nccl2283alltoall", "ompieagerlimit"])
    assert "recursive halving and doubling" in text and "eager limit" in text and "Listening for" in text
