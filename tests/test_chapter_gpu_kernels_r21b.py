"""Section gpu_kernels-set-associative of "Attention kernels on the GPU": set-associative caches, and L2 for an LLM.

The numbers are recomputed here without mha_kit: a list-based LRU cache written out below (not
mha_kit.set_associative), Patterson and Hennessy's counts (COD 5th ed., sec. 5.4: 5, 4 and 3 misses), the
column walk's misses from the index arithmetic, and Llama 3 8B's parameter count from its config.json shape
with the H100 datasheet rates. They are compared with the chapter's stored outputs.
"""
import json
import math
import pathlib

import pytest

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
NB = json.loads((BOOK / "gpu_kernels.ipynb").read_text())
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text()

# H100 SXM datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense bf16; L2 50 MB, stored in the record as 50 x 2^20 bytes
HBM, BF16, L2 = 3.35e12, 989e12, 50 * 2**20
# Llama 3 8B (config.json): d 4096, 32 layers, 32 query heads and 8 KV heads of 128, MLP 14336, vocabulary
# 128256, untied embedding and output head, two RMSNorm weights a layer and one at the end
D, LAYERS, H, KV, HD, FF, V = 4096, 32, 32, 8, 128, 14336, 128_256
ATTN = D * H * HD + 2 * D * KV * HD + H * HD * D  # q, k, v, o
MLP = 3 * D * FF  # gate, up, down
PARAMS = 2 * V * D + LAYERS * (ATTN + MLP + 2 * D) + D


def lru_misses(lines, sets, ways):
    """Misses of an LRU cache: each set a list of lines, most recently used last."""
    table, misses = [[] for _ in range(sets)], []
    for line in lines:
        ways_of_set = table[line % sets]
        hit = line in ways_of_set
        if hit:
            ways_of_set.remove(line)
        elif len(ways_of_set) == ways:
            ways_of_set.pop(0)
        ways_of_set.append(line)
        misses.append(not hit)
    return misses


def three_cs(lines, sets, ways):
    """(misses, compulsory, capacity, conflict), the last two against a fully associative LRU cache."""
    miss, full_miss, seen = lru_misses(lines, sets, ways), lru_misses(lines, 1, sets * ways), set()
    compulsory = capacity = conflict = 0
    for line, m, fm in zip(lines, miss, full_miss):
        if m and line not in seen:
            compulsory += 1
        elif m and fm:
            capacity += 1
        elif m:
            conflict += 1
        seen.add(line)
    return sum(miss), compulsory, capacity, conflict


def glued(key):
    for cell in NB["cells"]:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == key:
                return out["data"]["application/papermill.record/text/plain"].strip("'")
    raise KeyError(key)


def printed(marker):
    """The stdout of the code cell whose source contains ``marker``, as lines."""
    cell = next(c for c in NB["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").splitlines()


def test_patterson_hennessy_example():
    blocks = [0, 8, 0, 6, 8]  # four one-word blocks: block address = line number
    counts = {ways: three_cs(blocks, 4 // ways, ways) for ways in (1, 2, 4)}
    assert [counts[w][0] for w in (1, 2, 4)] == [5, 4, 3]  # the book's counts
    assert counts[1] == (5, 3, 0, 2) and counts[2] == (4, 3, 0, 1) and counts[4] == (3, 3, 0, 0)
    assert glued("gk_sa_ph") == "5, 4, 3"
    assert printed("ph_blocks = ") == [
        "direct-mapped            sets x ways = 4 x 1: 5 misses (compulsory 3, capacity 0, conflict 2)",
        "two-way set-associative  sets x ways = 2 x 2: 4 misses (compulsory 3, capacity 0, conflict 1)",
        "fully associative        sets x ways = 1 x 4: 3 misses (compulsory 3, capacity 0, conflict 0)",
    ]


def column_lines(row_bytes, rows=64, cols=8, line=64):
    return [(r * row_bytes + 8 * c) // line for c in range(cols) for r in range(rows)]


def test_column_walk_index_arithmetic():
    sets = 32 * 1024 // 64 // 8  # 64
    assert sets == 64
    assert {line % sets for line in column_lines(4096)} == {0}  # a 64-line stride: one set
    assert len({line % sets for line in column_lines(4160)}) == 64  # 65 lines: every set
    # one set of 8 ways against 64 lines read cyclically, LRU: every read misses, 64 of them first touches
    assert three_cs(column_lines(4096), sets, 8) == (512, 64, 0, 448)
    assert three_cs(column_lines(4160), sets, 8) == (64, 64, 0, 0)
    assert (glued("gk_sa_tight_miss"), glued("gk_sa_tight_conflict"), glued("gk_sa_padded_miss")) == ("512", "448", "64")
    assert (glued("gk_sa_reads"), glued("gk_sa_block")) == ("512", "4 KiB")


def test_the_ways_table():
    lines = printed("def column_walk(")
    assert lines[0] == ("512 columns                        stride 64 lines ->  1 of 64 sets: 512 misses of 512 "
                        "(compulsory 64, conflict 448, capacity 0)")
    assert lines[1] == ("520 columns (one line of padding)  stride 65 lines -> 64 of 64 sets: 64 misses of 512 "
                        "(compulsory 64, conflict 0, capacity 0)")
    rows = [line.split() for line in lines[5:]]
    for ways, row in zip((1, 2, 4, 8, 16, 64, 512), rows):
        sets = 512 // ways
        slots = sets // math.gcd(64, sets) * ways
        tight = three_cs(column_lines(4096), sets, ways)[0]
        padded = three_cs(column_lines(4160), sets, ways)[0]
        assert [int(x) for x in row] == [ways, sets, slots, tight, padded], row
    assert [int(r[3]) for r in rows] == [512, 512, 512, 512, 512, 64, 64]  # thrashes until 64 ways


def test_weights_against_l2():
    assert PARAMS == 8_030_261_248
    weights = 2 * PARAMS  # bf16
    step, flop = weights / HBM, 2 * PARAMS / BF16
    assert (glued("gk_sa_weights_gb"), glued("gk_sa_step_ms"), glued("gk_sa_flop_us")) == ("16.1", "4.8", "16")
    assert glued("gk_sa_ridge") == f"{BF16 / HBM:.0f}" == "295"
    assert glued("gk_sa_l2s") == f"{weights / L2:.0f}" == "306"
    assert glued("gk_sa_l2_share") == f"{L2 / weights:.2%}" == "0.33%"
    layer = 2 * (ATTN + MLP)
    assert layer == 436_207_616 and glued("gk_sa_layer_l2s") == f"{layer / L2:.1f}" == "8.3"
    pinned = 0.75 * L2
    assert glued("gk_sa_pin_us") == f"{pinned / HBM * 1e6:.0f}" == "12"
    assert glued("gk_sa_pin_share") == f"{pinned / weights:.2%}" == "0.24%"
    lines = printed("facts8 = ")
    assert lines[0] == (f"Llama 3 8B bf16 weights {weights / 1e9:.2f} GB: 1 FLOP per byte at batch 1 (H100 ridge 295); "
                        f"{step * 1e3:.2f} ms of HBM reads against {flop * 1e6:.0f} us of tensor-core work")
    assert lines[1] == "L2 50 MiB = 0.33% of the weights; one layer's 416 MiB = 8.3 L2s"


@pytest.mark.parametrize("ratio, hits", [(0.5, 100), (0.9, 100), (1.1, 0), (2.0, 0)])
def test_lru_cliff(ratio, hits):
    cache = 256
    step = list(range(int(ratio * cache)))
    second = lru_misses(step + step, 1, cache)[len(step):]
    assert 100 * second.count(False) // len(step) == hits
    line = next(x for x in printed("facts8 = ") if x.startswith(f"weights {ratio:6.1f}x"))
    assert line.endswith(f"second step hits {hits:3d}% of its lines")


def test_the_real_ratio_and_the_pinning_line():
    lines = printed("facts8 = ")
    assert lines[6] == "weights  306.3x the cache: second step hits   0% of its lines"  # larger than the cache
    assert lines[7] == "pinning 37.5 MiB of weights would save 11.7 us of the 4.79 ms step (0.24%)"


def test_reuse_within_a_step():
    assert glued("gk_sa_prefill_blocks") == str(8192 // 128) == "64"
    assert glued("gk_sa_q_reads") == str(8192 // 128 * (H // KV)) == "256"
    lines = printed("tile_m = 128")
    assert lines[1].startswith("decode, batch 64      : each weight tile is read by  1 row block(s)")


def test_section_sits_after_littles_law_and_cites_what_it_read():
    text = ["".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown"]
    labels = [t.split("\n", 1)[0] for t in text if t.startswith("(gpu_kernels-")]
    at = labels.index("(gpu_kernels-set-associative)=")
    assert labels[at - 1:at + 2] == ["(gpu_kernels-littles-law)=", "(gpu_kernels-set-associative)=",
                                     "(gpu_kernels-hopper-blackwell)="]
    first = next(i for i, t in enumerate(text) if t.startswith("(gpu_kernels-set-associative)="))
    last = next(i for i, t in enumerate(text) if t.startswith("(gpu_kernels-hopper-blackwell)="))
    section = "\n".join(text[first:last])
    assert section.count("```{admonition} In the interview") == 2
    for key in ("qa_medium_nvidia_sse", "patterson2014cod", "jia2018volta", "luo2024hopper", "luo2025hopper",
                "cudaguidel2", "nvidiaforumcachelines", "nsightcomputeguide"):
        assert key in section and f"{{{key}," in BIB, key
    for api in ("cudaLimitPersistingL2CacheSize", "cudaAccessPolicyWindow", "hitRatio", "hitProp", "missProp",
                "cudaGraphKernelNodeSetAttribute", "cudaCtxResetPersistingL2Cache"):
        assert api in section, api
