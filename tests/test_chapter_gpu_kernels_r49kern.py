"""gpu_kernels-triton-pow2 and gpu_kernels-wgmma-async: the padding a power-of-two Triton block costs
(BLOCK = the smallest power of two >= n, written here with a loop, not the chapter's bit trick), the -inf and 0
fills of a padded softmax row, the LSE merge of two K/V-tile partials against one pass (written here from the
formula, not through mha_kit), and FlashAttention-3's K-stage barrier counts (hopper/flash_fwd_kernel_sm90.h:
num_consumers = NumMmaThreads, transaction bytes = the K tile; hopper/sm90_pipeline_no_cluster.hpp: one
empty-barrier arrival per consumer warpgroup; hopper/tile_size.h: kBlockN 128 causal, 176 non-causal)."""
import re

import numpy as np
import pytest

import chapter_outputs


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("gpu_kernels")


def _block(n):
    b = 1
    while b < n:
        b *= 2
    return b


@pytest.mark.parametrize("n", [64, 80, 96, 781, 4000, 4097])
def test_padding_table(nb, n):
    rows = [ln.split() for ln in chapter_outputs.printed(nb, "def next_power_of_2").splitlines()]
    row = next(r for r in rows if len(r) >= 5 and r[-4] == str(n))
    b = _block(n)
    assert row[-3:] == [str(b), str(b - n), f"{(b - n) / b:.1%}"]
    assert chapter_outputs.glued(nb, "gk_pow2_waste_80") == f"{48 / 128:.1%}" == "37.5%"
    assert chapter_outputs.glued(nb, "gk_pow2_waste_781") == f"{(1024 - 781) / 1024:.1%}"
    assert chapter_outputs.glued(nb, "gk_pow2_block_4097") == f"{_block(4097):,}" == "8,192"
    assert chapter_outputs.glued(nb, "gk_pow2_drill_pad") == str(_block(1000) - 1000)


def test_fa3_head_bucket(nb):
    # tile_size_fwd_sm90 branches on head <= 64, 96, 128, 192, else 256: a head of 80 runs as 96
    bucket = next(h for h in (64, 96, 128, 192, 256) if h >= 80)
    assert chapter_outputs.glued(nb, "gk_pow2_fa3_80") == str(bucket) == "96"
    assert chapter_outputs.glued(nb, "gk_pow2_fa3_80_waste") == f"{(bucket - 80) / bucket:.1%}"
    assert f"Triton block 128 ({48 / 128:.1%} waste), FlashAttention-3 bucket {bucket}" in chapter_outputs.printed(nb, "def next_power_of_2")


def test_fills(nb):
    rng = np.random.default_rng(0)
    s = rng.normal(0.0, 2.0, 80)
    # a 0 fill adds 48 scores of 0: their share of the probability is 48 e^0 / (sum e^s + 48)
    leak = 48 / (np.exp(s).sum() + 48)
    out = chapter_outputs.printed(nb, "def next_power_of_2")
    assert f"the 48 pad lanes take {leak:.1%} of the probability" in out
    assert chapter_outputs.glued(nb, "gk_pow2_zero_mass") == f"{leak:.1%}"
    assert "real lanes equal the unpadded softmax: True" in out and "real lanes equal it: False" in out
    assert "sum, other=-inf: -inf" in out


def test_merge_and_barriers(nb):
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(4, 16)), rng.normal(size=(64, 16)), rng.normal(size=(64, 16))
    s = q @ k.T
    full = np.exp(s - s.max(1, keepdims=True))
    ref = full @ v / full.sum(1, keepdims=True)
    halves = []
    for idx in (np.r_[0:16, 32:48], np.r_[16:32, 48:64]):  # even and odd tiles of 16
        m = s[:, idx].max(1)
        p = np.exp(s[:, idx] - m[:, None])
        halves.append((m, p.sum(1), p @ v[idx]))
    (ma, la, oa), (mb, lb, ob) = halves
    mm = np.maximum(ma, mb)
    a, b = np.exp(ma - mm), np.exp(mb - mm)
    assert np.allclose((a[:, None] * oa + b[:, None] * ob) / (a * la + b * lb)[:, None], ref, rtol=1e-12, atol=1e-12)
    out = chapter_outputs.printed(nb, "def partial_state")
    assert "merged by LSE: equals the single pass: True" in out and "(adding O and l as they are): False" in out
    assert "each from its own rows, stacked equal the single pass: True" in out
    for mask, block_n in (("causal or local", 128), ("non-causal", 176)):  # tile_size_fwd_sm90, head 128, 2 bytes
        assert f"({mask}, kBlockN {block_n}): 1 producer arrival + {block_n * 128 * 2:,} transaction bytes" in out
    assert chapter_outputs.glued(nb, "gk_wg_k_tile_bytes") == f"{128 * 128 * 2:,}" == "32,768"
    assert chapter_outputs.glued(nb, "gk_wg_k_tile_bytes_noncausal") == f"{176 * 128 * 2:,}" == "45,056"
    # CUTLASS >= 3.6, cluster 1: one arrival per consumer thread; FA3's PipelineTmaAsyncNoCluster: per warpgroup
    assert re.search(rf"per consumer thread .*: {256}, {128} with one ring per warpgroup; .*: {257} -> {129}", out)
    assert re.search(rf"per consumer warpgroup \(FA3 PipelineTmaAsyncNoCluster\): {256 // 128}, {1} with one ring", out)
    assert chapter_outputs.glued(nb, "gk_wg_empty_fa3") == "2" and chapter_outputs.glued(nb, "gk_wg_empty_thread") == "256"


def test_sections_cite_and_link(nb):
    tri = chapter_outputs.section(nb, "gpu_kernels-triton-pow2", end="gpu_kernels-triton-vs-official")
    chapter_outputs.assert_cited(tri, ["tritonarange", "tritonfusedsoftmax", "pytorchmaskedload", "fa3tilesize"])
    assert "default fill" not in tri and "undefined" in tri
    assert 'other=-float("inf")' in tri and "In the interview" in tri and "Drill" in tri and "fd237c7" in tri
    wg = chapter_outputs.section(nb, "gpu_kernels-wgmma-async", end="gpu_kernels-occupancy")
    chapter_outputs.assert_cited(wg, ["ptxisa", "fa3mainloop", "cutlasssm120", "cudaguide", "cutlasspipeline",
                                      "leetcudach18", "tilusmbarrier", "fa3tilesize"])
    assert "PipelineTmaAsyncNoCluster" in wg and "named barrier" in wg
    for ref in ("flash_decoding-split-keys", "attention_cost-merge", "gpu_kernels-tensor-cores"):
        assert "{ref}`" + ref + "`" in wg and ref in chapter_outputs.book_labels(), ref
    for ref in ("gpu_kernels-tensor-cores", "softmax_numerics-online-cost"):
        assert "{ref}`" + ref + "`" in tri and ref in chapter_outputs.book_labels(), ref
    assert "sm_120" in wg and "0251105a" in wg and "In the interview" in wg and ":class: dropdown" in wg
