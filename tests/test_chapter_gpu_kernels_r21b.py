"""Section gpu_kernels-set-associative of "Attention kernels on the GPU": set-associative caches, and L2 for an LLM.

The numbers are recomputed here without mha_kit: a list-based LRU cache written out below (not
mha_kit.set_associative), Patterson and Hennessy's counts (COD 5th ed., sec. 5.4: 5, 4 and 3 misses), the
column walk's misses from the index arithmetic, Llama 3 8B's parameter count and KV bytes from its
config.json shape with the H100 datasheet rates, the causal K/V-tile reuse by counting, and an A100's
cudaDeviceProp values as NVIDIA's forum reports them. They are compared with the chapter's stored outputs.
"""
import json
import math
import pathlib

import pytest
import chapter_outputs

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
STREAMED = PARAMS - V * D  # a decode step gathers B rows of the input embedding table, reads the rest whole
STEP = 2 * STREAMED  # bf16 bytes of weights a step reads
KV_TOKEN = 2 * LAYERS * KV * HD * 2  # bf16 K and V of one token, all layers
ATTN_FLOPS = 4 * H * HD * LAYERS  # QK^T and PV per cached token for one query
RIDGE = BF16 / HBM


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
    return chapter_outputs.glued(NB, key)


def printed(marker):
    """The stdout of the code cell whose source contains ``marker``, as lines."""
    return chapter_outputs.printed(NB, marker).splitlines()


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
    assert PARAMS == 8_030_261_248 and STREAMED == 7_504_924_672
    weights = 2 * PARAMS  # bf16
    step, flop = STEP / HBM, 2 * STREAMED / BF16
    assert (glued("gk_sa_weights_gb"), glued("gk_sa_step_gb"), glued("gk_sa_step_ms"), glued("gk_sa_flop_us")) == (
        "16.1", "15.0", "4.5", "15")
    assert glued("gk_sa_ridge") == f"{RIDGE:.0f}" == "295"
    assert glued("gk_sa_l2s") == f"{STEP / L2:.0f}" == "286"
    assert glued("gk_sa_l2_share") == f"{L2 / STEP:.2%}" == "0.35%"  # the most any policy keeps for the next step
    layer = 2 * (ATTN + MLP)
    assert layer == 436_207_616 and glued("gk_sa_layer_l2s") == f"{layer / L2:.1f}" == "8.3"
    pinned = 0.75 * L2
    assert glued("gk_sa_pin_us") == f"{pinned / HBM * 1e6:.0f}" == "12"
    assert glued("gk_sa_pin_share") == f"{pinned / STEP:.2%}" == "0.26%"
    lines = printed("facts8 = ")
    assert lines[0] == (f"Llama 3 8B bf16 weights {weights / 1e9:.2f} GB, {STEP / 1e9:.2f} GB of them read by a batch-1 "
                        f"step: 1 FLOP per byte (H100 ridge 295); {step * 1e3:.2f} ms of HBM reads against "
                        f"{flop * 1e6:.0f} us of tensor-core work")
    assert "16.06 GB, 15.01 GB" in lines[0] and "4.48 ms" in lines[0]
    assert lines[1] == ("L2 50 MiB = 0.35% of a step's weight bytes, the most that any replacement policy can keep for "
                        "the next step; one layer's 416 MiB = 8.3 L2s")


@pytest.mark.parametrize("ratio, hits", [(0.5, 100), (0.9, 100), (1.1, 0), (2.0, 0)])
def test_lru_cliff(ratio, hits):
    cache = 256
    step = list(range(int(ratio * cache)))
    second = lru_misses(step + step, 1, cache)[len(step):]
    assert 100 * second.count(False) // len(step) == hits
    line = next(x for x in printed("facts8 = ") if x.startswith(f"weights {ratio:6.1f}x"))
    assert line.endswith(f"second step hits {hits:3d}% of its lines")


def test_the_real_ratio_the_pinning_bound_and_the_a100_window():
    lines = printed("facts8 = ")
    assert lines[6] == "weights  286.3x the cache: second step hits   0% of its lines"  # larger than the cache
    assert f"{STEP / L2:6.1f}" == " 286.3"
    assert lines[7] == "pinning 37.5 MiB saves at most 11.7 us a pass, whatever it holds (0.26% of the 4.48 ms step)"
    # an A100's cudaDeviceProp (forum thread 275542): 40 MiB of L2, 30 MiB set-aside, a window of 128 MiB - 4 KiB
    l2, persisting, window = 41_943_040, 31_457_280, 134_213_632
    assert (l2, persisting, window) == (40 * 2**20, 30 * 2**20, 128 * 2**20 - 4096)
    windows = -(-STEP // window)
    assert windows == 112 and glued("gk_sa_windows") == "112"
    assert lines[8] == ("A100: l2CacheSize 40 MiB, set-aside at most 75% of it, windows of at most 128.0 MiB: "
                        "112 of them to span the step's weights")


def intensity(batch, context):
    return batch * (2 * STREAMED + ATTN_FLOPS * context) / (STEP + batch * KV_TOKEN * context)


def test_when_decode_stays_memory_bound():
    assert KV_TOKEN == 131_072 and KV_TOKEN * 8192 == 2**30  # 128 KiB a token, 1 GiB a sequence at 8K
    limit_8k = (2 * STREAMED / 8192 + ATTN_FLOPS) / KV_TOKEN
    assert f"{limit_8k:.1f}" == "18.0" and glued("gk_sa_limit_8k") == "18"
    assert all(intensity(b, 8192) < limit_8k < RIDGE for b in (1, 64, 1024, 10**6))
    s_star = 2 * STREAMED / (RIDGE * KV_TOKEN - ATTN_FLOPS)
    assert glued("gk_sa_s_star") == f"{s_star:.0f}" == "393"
    assert intensity(10**9, 394) < RIDGE < intensity(10**9, 392)  # the limit crosses the ridge there
    batch_256 = RIDGE * STEP / (2 * STREAMED + ATTN_FLOPS * 256 - RIDGE * KV_TOKEN * 256)
    assert glued("gk_sa_batch_256") == f"{batch_256:,.0f}" == "846"
    assert intensity(845, 256) < RIDGE < intensity(847, 256)
    assert glued("gk_sa_seq_gflop") == "19.3"
    lines = printed("def decode_intensity(")
    assert lines == [
        "context 8,192: FLOP/B at batch 1, 64, 1024: 1.2, 14.8, 17.7; limit 18.0, never the ridge",
        "context   256: FLOP/B at batch 1, 64, 1024: 1.0, 56.5, 314.1; limit 451.3, ridge at batch 846",
        "one sequence at 8K: 1 GiB of cache, 19.3 GFLOP per step",
        "decode is memory-bound at any batch once every sequence holds more than 393 tokens; a prefill of n tokens "
        "uses each weight n times and crosses the ridge near n = 295",
    ]
    assert f"{intensity(64, 8192):.1f}" == "14.8" and f"{intensity(1024, 256):.1f}" == "314.1"


def test_reuse_within_a_step_under_the_causal_mask():
    assert glued("gk_sa_prefill_blocks") == str(8192 // 128) == "64"
    tiles, group = 8192 // 128, H // KV
    # query block i reads K/V tiles 0..i, so tile j is read by the blocks i = j..63
    reads = [sum(1 for i in range(tiles) if i >= j) for j in range(tiles)]
    assert reads[0] == 64 and reads[-1] == 1 and sum(reads) == 2080
    assert glued("gk_sa_tile_mean") == str(sum(reads) / tiles) == "32.5"
    assert glued("gk_sa_q_reads_mean") == f"{group * sum(reads) / tiles:.0f}" == "130"
    assert glued("gk_sa_q_reads") == str(group * reads[0]) == "256"  # the first tile, or no mask
    lines = printed("tile_m = 128")
    assert lines[1].startswith("decode, batch 64      : each weight tile is read by  1 row block(s): no weight reuse")
    assert lines[2] == ("causal FlashAttention, 8K tokens: K/V tile j is read by 64 - j query blocks of a head "
                        "(64 for the first, 1 for the last, 32.5 on average)")
    assert lines[3] == ("with GQA by the 4 query heads of its group: 130.0 reads on average, 256 at most (the first "
                        "tile, or no mask); 8,320 tile reads per KV head against 16,384 without the mask")


def test_a_shared_prefix_against_the_set_aside():
    per_layer, pinned = KV_TOKEN // LAYERS, 0.75 * L2
    assert per_layer == 4096
    assert glued("gk_sa_prefix_layer_tokens") == f"{pinned / per_layer:,.0f}" == "9,600"
    assert glued("gk_sa_prefix_all_tokens") == f"{pinned / KV_TOKEN:,.0f}" == "300"
    assert glued("gk_sa_prefix_l2s") == f"{1000 * KV_TOKEN / L2:.1f}" == "2.5"
    resaved = 63 * 1000 * per_layer / HBM
    assert glued("gk_sa_prefix_resave_us") == f"{resaved * 1e6:.0f}" == "77"
    assert printed("kv_layer = ") == [
        "KV per token 128 KiB (4 KiB a layer); the 1,000-token prefix 125 MiB (2.5 L2s), a layer's 3.9 MiB in "
        "63 pages of 64 KiB",
        "the 37.5 MiB set-aside holds 9,600 prefix tokens of one layer, 300 of all 32",
        "64 sequences reading a layer's prefix each: at most 77 us of re-reads a layer for L2",
    ]


def test_section_sits_after_littles_law_and_cites_what_it_read():
    text = ["".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown"]
    labels = [t.split("\n", 1)[0] for t in text if t.startswith("(gpu_kernels-")]
    at = labels.index("(gpu_kernels-set-associative)=")
    assert labels[at - 1:at + 2] == ["(gpu_kernels-littles-law)=", "(gpu_kernels-set-associative)=",
                                     "(gpu_kernels-hopper-blackwell)="]
    section = chapter_outputs.section(NB, "gpu_kernels-set-associative", end="gpu_kernels-hopper-blackwell",
                                      kinds=("markdown",))
    assert section.count("```{admonition} In the interview") == 2
    for key in ("qa_medium_nvidia_sse", "patterson2014cod", "jia2018volta", "luo2024hopper", "luo2025hopper",
                "cudaguidel2", "nvidiaforumcachelines", "nsightcomputeguide", "nvidiaforuml2props",
                "nvidiaforuml2fabric", "cudaruntimel2", "libcudacxxaccessprop", "hugectrgpucache",
                "ruetsch2010transpose", "mei2017gpumem", "cudabestpractices", "yuzugueler2025preserve"):
        assert key in section and f"{{{key}," in BIB, key
    for api in ("cudaLimitPersistingL2CacheSize", "cudaAccessPolicyWindow", "hitRatio", "hitProp", "missProp",
                "cudaGraphKernelNodeSetAttribute", "cudaCtxResetPersistingL2Cache", "cudaLaunchAttributeAccessPolicyWindow",
                "cuda::apply_access_property", "createpolicy", "cudaLimitMaxL2FetchGranularity"):
        assert api in section, api
    # the abstracts read support no more than this: no GPU model for Luo et al. 2025, no "each memory level"
    assert "H800" not in section and "each memory level" not in section
    assert "50 MiB" in section and "50 MB on" not in section  # NVIDIA's L2 "MB" are binary


def test_cross_references_point_the_right_way():
    text = ["".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown"]
    labels = [t.split("\n", 1)[0] for t in text if t.startswith("(gpu_kernels-")]
    here, gemm = labels.index("(gpu_kernels-set-associative)="), labels.index("(gpu_kernels-cpu-gemm)=")
    assert gemm > here  # so the section must say "later", not "above"
    section = chapter_outputs.section(NB, "gpu_kernels-set-associative", end="gpu_kernels-hopper-blackwell",
                                      kinds=("markdown",))
    assert "The CPU GEMM later in this\nchapter ({ref}`gpu_kernels-cpu-gemm`" in section
    assert "The CPU GEMM above" not in section


def test_linformer_paragraph_states_its_costs_and_sources():
    beyond = json.loads((BOOK / "beyond_kv_cache.ipynb").read_text())
    para = next("".join(c["source"]) for c in beyond["cells"] if "Linformer keeps the softmax" in "".join(c["source"]))
    assert "$O(nkd)$" in para and "$O(nk)$" in para
    assert "{cite:p}`fairseqlinformer{multihead_linear_attention.py, compress_k}`" in para
    assert "masked-language model" in para and "{fairseqlinformer," in BIB
