"""Section serving_operations-long-outputs of "Serving operations": 10K-30K-token outputs.

Recomputed from Llama 3 70B's shape written out (config.json), the H100 SXM datasheet and PCIe Gen5
rates, and the PagedAttention-style per-token cache size, not through mk.plan_deployment or
mk.kv_cache_bytes_per_gpu: the free memory and what fits, swap against recompute of a 30K context,
the crossover of cache and weight reads, the mean step over 1K and 32K outputs, and the levers' rows.
"""
import pathlib
import re

import numpy as np
import pytest
import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
LABEL, END = "serving_operations-long-outputs", "serving_operations-online-offline"

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, vocabulary 128256
L, D, H, KV, HD, V = 80, 8192, 64, 8, 128, 128_256
P70 = 70_553_706_496  # parameters, embedding table and untied output head included
BW, FLOPS, HBM, NVLINK, PCIE = 3.35e12, 989e12, 80 * 10**9, 450e9, 64e9  # H100 SXM; PCIe Gen5 x16 each way
TP, PROMPT, BATCH = 4, 1000, 16
WEIGHTS = -(-P70 * 2 // TP)  # bf16 weights per GPU, rounded up
FREE = HBM - WEIGHTS


def kv_per_gpu(ctx, nbytes=2):
    return int(2 * L * (KV // TP) * HD * ctx * nbytes)


def step(tokens, logits, attn_flops, kv_read):
    matmul = 2 * (P70 - 2 * V * D) * tokens + 2 * V * D * logits
    compute = (matmul + attn_flops) / FLOPS / TP
    memory = ((P70 - V * D) * 2 / TP + kv_read) / BW
    ring = 2 * (TP - 1) * (tokens * D // TP) * 2  # ring all-reduce of (tokens, d) bf16, bytes per GPU
    return np.maximum(memory, compute) + 2 * L * ring / NVLINK


def decode(ctx):
    return step(BATCH, BATCH, 2 * L * 2 * H * ctx * HD * BATCH, BATCH * 2 * L * (KV // TP) * HD * ctx * 2)


NB = chapter_outputs.notebook("serving_operations")
TEXT = chapter_outputs.section(NB, LABEL, END)


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_requests_that_fit_as_the_cache_grows():
    fits = [FREE // kv_per_gpu(PROMPT + out) for out in (0, 16_384, 32_768)]
    assert fits == [545, 31, 16]
    assert [glued(k) for k in ("so_lo_fit_admit", "so_lo_fit_16k", "so_lo_fit_32k")] == ["545", "31", "16"]
    out = chapter_outputs.printed(NB, "lo_fit[lo_out] = ")
    assert f"free for cache {FREE / 1e9:.1f} GB per GPU" in out
    assert f"{kv_per_gpu(PROMPT + 32_768) / 1e9:5.2f} GB per GPU" in out


def test_swap_against_recompute_of_30k_tokens():
    nbytes = kv_per_gpu(30_000)
    assert glued("so_lo_swap_gb") == f"{nbytes / 1e9:.2f}" == "2.46"
    assert glued("so_lo_swap_s") == f"{2 * nbytes / PCIE:.3f}" == "0.077"
    n = 30_000
    recompute = step(n, 1, 2 * L * (2 * H * n * n * HD) // 2, kv_per_gpu(n))
    assert glued("so_lo_recompute_s") == f"{recompute:.2f}" == "1.60"


def test_crossover_and_mean_step():
    cross = (P70 - V * D) * 2 // TP / (BATCH * kv_per_gpu(1))
    assert glued("so_lo_cross") == f"{cross:,.0f}" == "26,513"
    means = {n: decode(PROMPT + np.arange(1, n + 1)).mean() for n in (1_024, 32_768)}
    assert glued("so_lo_step_1k") == f"{1e3 * means[1_024]:.1f}"
    assert glued("so_lo_step_32k") == f"{1e3 * means[32_768]:.1f}"
    assert glued("so_lo_step_ratio") == f"{means[32_768] / means[1_024]:.1f}"
    assert means[32_768] > means[1_024]
    end = decode(PROMPT + 32_768)  # the last step of a lockstep batch, the worst case
    assert glued("so_lo_step_end") == f"{1e3 * end:.1f}" and end > means[32_768]
    assert "lockstep" in TEXT and "TPOT stays flat" in TEXT


def test_block_int4_overhead_and_mla_per_gpu():
    assert glued("so_lo_block_kb") == f"{(KV // TP) * HD * 2 * 16 / 1024:.0f}" == "8"
    assert glued("so_lo_int4_over_128") == f"{100 * 2 * 2 / (128 * 0.5):.1f}" == "6.2"
    assert glued("so_lo_int4_over_32") == f"{100 * 2 * 2 / (32 * 0.5):.1f}" == "25.0"
    assert glued("so_lo_mla_b") == f"{61 * (512 + 64) * 2:,}" and glued("so_lo_tok_b") == f"{kv_per_gpu(1):,}"
    assert 61 * (512 + 64) * 2 < kv_per_gpu(1) * TP  # MLA saves per replica, not per rank at TP 4


@pytest.mark.parametrize("key, ctx, nbytes", [
    ("bf16", PROMPT + 32_768, 2), ("fp8", PROMPT + 32_768, 1), ("int4", PROMPT + 32_768, 0.5),
    ("cap", PROMPT + 16_384, 2), ("evict", PROMPT + 3_277, 2),  # 10% of 32,768 output tokens kept
])
def test_lever_rows(key, ctx, nbytes):
    per_seq = kv_per_gpu(ctx, nbytes)
    assert glued(f"so_lo_{key}_fit") == str(FREE // per_seq)
    assert glued(f"so_lo_{key}_gb") == f"{BATCH * per_seq / 1e9:.2f}"


def test_speculation_and_cache_per_token():
    alpha, k = 0.7, 4
    assert glued("so_lo_spec") == f"{(1 - alpha ** (k + 1)) / (1 - alpha):.2f}" == "2.77"
    out = chapter_outputs.printed(NB, "lo_mha = ")
    assert f"{2 * L * KV * HD * 2:,} B" in out and f"{2 * L * H * HD * 2:,} B" in out
    assert f"{61 * (512 + 64) * 2:,} B" in out  # DeepSeek-V3: 61 layers, latent 512 + RoPE key 64


def test_rounded_numbers_in_the_prose():
    """The interview box and follow-ups quote rounded figures: they must match the computed ones."""
    assert f"{kv_per_gpu(PROMPT) / 1e9:.2f}" == "0.08" and f"{kv_per_gpu(PROMPT + 32_768) / 1e9:.1f}" == "2.8"
    assert "from 0.08 to 2.8 GB per GPU" in TEXT and "near 27K tokens" in TEXT
    assert 2 * kv_per_gpu(30_000) / PCIE < 0.1 and "under a tenth of a second" in TEXT
    assert step(30_000, 1, 2 * L * (2 * H * 30_000 ** 2 * HD) // 2, kv_per_gpu(30_000)) > 1.5
    assert "over a second and a half" in TEXT


def test_links_and_citations_resolve():
    labels = set(re.findall(r"\{ref\}`([\w.-]+)`", TEXT))
    docs = set(re.findall(r"\{doc\}`([\w.-]+)`", TEXT))
    book = "".join(p.read_text(encoding="utf-8") for p in BOOK.glob("*.ipynb"))
    assert labels and all(f"({lab})=" in book for lab in labels), labels
    assert all((BOOK / f"{d}.ipynb").exists() for d in docs), docs
    bib = (BOOK.parent / "references.bib").read_text(encoding="utf-8")
    for key in set(re.findall(r"\{cite:p\}`(\w+)", TEXT)):
        assert re.search(rf"^@\w+\{{{key},", bib, re.M), key
