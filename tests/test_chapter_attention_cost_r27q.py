"""Sections attention_cost-block-sizes and attention_cost-training-flops, recomputed from the formulas.

Block sizes: Algorithm 1 line 1 of arXiv:2205.14135 (B_c = ceil(M/4d), B_r = min(B_c, d)) with M the 227 KB
one H100 thread block may use (228 KB carve-out less 1 KB, Hopper Tuning Guide sec. 1.4.1.1) in 2-byte elements. Training FLOPs: 6N per
token (Kaplan et al. 2020 sec. 2.1) plus 3 or 3.5 times the causal attention forward
4 n^2 h d_h / 2 per layer (flash-attention benchmarks/benchmark_flash_attention.py), and PaLM's 6N + 12LHQT.
"""
import json
import math
import pathlib
import re

NB = pathlib.Path(__file__).parents[1] / "book" / "attention_cost.ipynb"
H100_SMEM = 228 * 1024 - 1024  # bytes one thread block may use
# Llama 3 8B (Llama 3 paper Table 3): 32 layers, width 4096, 32 query heads, 8 KV heads, head size 128,
# FFN 14,336, vocabulary 128,256, untied embeddings
L, D, H, H_KV, D_H, D_FF, VOCAB = 32, 4096, 32, 8, 128, 14336, 128256
N_CTX = 8192


def _output(marker):
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _params():
    per_layer = D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D + 3 * D * D_FF + 2 * D
    return L * per_layer + 2 * VOCAB * D + D


def test_block_sizes_on_h100():
    text = _output("REAL_TILES = ")
    m = H100_SMEM // 2
    assert f"M = {m:,} bf16 elements" in text
    for d in (64, 128):
        b_c = math.ceil(m / (4 * d))
        b_r = min(b_c, d)
        assert f"d = {d:>3}: B_c = ceil(M/4d) = {b_c}, B_r = min(B_c, d) = {b_r};" in text
        total = 2 * (b_r + b_c) * d + b_r * b_c
        assert f"= {total:,} elements = {total / m:.2f} M" in text
    assert (454, 227) == (math.ceil(m / 256), math.ceil(m / 512))


def test_fa3_key_block_share():
    text = _output("REAL_TILES = ")
    share = 176 / math.ceil(H100_SMEM // 2 / (4 * 128))
    assert f"FA3 non-causal d = 128: 176 keys = {share:.0%} of ceil(M/4d)" in text
    assert 0.7 < share < 0.85  # not "far below" the formula's block


def test_cap_binds_exactly_above_4d_squared():
    for d in (64, 128):
        for m in (4 * d * d - 4 * d, 4 * d * d, 4 * d * d + 1, 4 * d * d + 4 * d):
            b_c = math.ceil(m / (4 * d))
            assert (b_c > d) == (m > 4 * d * d)
    prose = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "markdown")
    assert "the cap binds\nexactly when $M > 4d^2$" in prose  # the rule just checked is the one the chapter states


def test_fa2_shared_memory():
    text = _output("REAL_TILES = ")
    for d, rows, keys in ((64, 128, 128), (128, 128, 64)):
        kib = 2 * d * (rows + 2 * keys) // 1024
        assert f"FA2             d = {d:>3}: {rows:>3} queries x {keys:>3} keys; Q, K, V tiles {kib} KiB" in text


def test_training_flops_llama3_8b():
    text = _output("l8_tf = ")
    n = _params()
    attn = 4 * N_CTX**2 * H * D_H // 2 * L / N_CTX  # benchmark's causal forward per layer, per token
    assert f"6N = {6 * n / 1e9:.1f} GFLOP per token; attention forward = {attn / 1e9:.2f} GFLOP" in text
    for mult in (3.0, 3.5):
        share = mult * attn / (6 * n + mult * attn)
        assert f"attention {mult * attn / 1e9:.2f} GFLOP, total {(6 * n + mult * attn) / 1e9:.1f} GFLOP, " \
               f"attention share {share:.1%}" in text
    palm = 6 * n + 12 * L * H * D_H * N_CTX
    assert f"6N + 12LHQT = {palm / 1e9:.1f} GFLOP" in text
    assert re.search(r"its attention term = 6 x the causal forward", text)
    embed = VOCAB * D
    share_ne = 3 * attn / (6 * (n - embed) + 3 * attn)
    assert f"6 x that = {6 * embed / 1e9:.2f} GFLOP per token; with N excluding it, " \
           f"attention share (x3) {share_ne:.1%}" in text
