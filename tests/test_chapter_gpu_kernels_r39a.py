"""Section gpu_kernels-tiny-model-levers: a 26M-parameter MiniMind2-small decode step on an H100 is launch-bound,
Llama 3 8B and 70B are weight-bound. Recomputed from the shapes (MiniMind's model_minimind.py at 29454c3, Llama 3's
config.json), the H100 datasheet (3.35 TB/s, 989 TFLOPS bf16) and the section's stated assumptions, and compared
with the stored output."""
import json
import math
import pathlib

import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "gpu_kernels.ipynb"
BW, FLOPS, L2 = 3.35e12, 989e12, 50 * 2**20
CPU_S, SLOT_S = 5e-6, 3.4e-6  # assumptions stated in the text
FUSED, EAGER, OUTSIDE = 12, 51, 4


def _stdout():
    cell = next(c for c in json.loads(NB.read_text())["cells"] if c.get("id") == "gpu_kernels-tiny-code")
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _layer(d, h, h_kv, d_h, d_ff):
    return d * h * d_h * 2 + d * h_kv * d_h * 2 + 3 * d * d_ff + 2 * d  # q, o; k, v; SwiGLU; two norms


def _mini():
    d_ff = 64 * math.ceil(int(512 * 8 / 3) / 64)
    assert d_ff == 1408
    return 6400 * 512 + 8 * _layer(512, 8, 2, 64, d_ff) + 512  # tied head: the table counted once


# (title, layers, streamed parameters: every matrix but the input embedding table, untied head)
MODELS = [("MiniMind2-small", 8, _mini()),
          ("Llama 3 8B", 32, 32 * _layer(4096, 32, 8, 128, 14336) + 4096 + 128256 * 4096),
          ("Llama 3 70B", 80, 80 * _layer(8192, 64, 8, 128, 28672) + 8192 + 128256 * 8192)]


def test_minimind_is_26m():
    assert _mini() == 25_829_888
    assert round(_mini() / 1e6) == 26  # the README's "26M"


@pytest.mark.parametrize("title, layers, params", MODELS)
def test_bound_table(title, layers, params):
    w_s, kernels = 2 * params / BW, layers * FUSED + OUTSIDE
    line = next(ln for ln in _stdout().splitlines() if ln.startswith(title))
    cols = line[len(title):].split()
    assert int(cols[0].replace(",", "")) == params
    assert cols[1] == f"{w_s * 1e6:,.0f}us"
    assert int(cols[2]) == kernels
    assert cols[3] == f"{kernels * CPU_S * 1e6:,.0f}us"
    assert cols[4] == f"{kernels * CPU_S / w_s:.2f}x"
    assert cols[5] == ("launches" if kernels * CPU_S > w_s else "weights")
    assert (cols[5] == "launches") == (title == "MiniMind2-small")


def test_levers_flip_for_the_tiny_model():
    w_s = 2 * _mini() / BW
    eager = max(w_s, (8 * EAGER + OUTSIDE) * CPU_S)
    graph = max(w_s, (8 * FUSED + OUTSIDE) * SLOT_S)
    out = _stdout()
    assert f"step >= {eager * 1e6:6,.0f} us    1.00x" in out
    assert f"{graph * 1e6:6,.0f} us   {eager / graph:5.2f}x" in out
    assert max(w_s / 2, (8 * EAGER + OUTSIDE) * CPU_S) == eager  # int8 changes nothing at batch 1
    assert 5 < eager / graph < 7
    assert f"{2 * _mini() / 2**20:.1f} MiB of bf16 weights against a {L2 / 2**20:.0f} MiB L2" in out
    assert 2 * _mini() < L2


def test_kv_ridge_and_crossing():
    out = _stdout()
    kv = 2 * 8 * 2 * 64 * 2 * 512  # K and V, layers, KV heads, head size, bf16 bytes, tokens
    assert f"KV cache at 512 tokens: {kv / 2**20:.0f} MiB" in out
    ridge = FLOPS / BW
    assert f"ridge batch {ridge:.0f} tokens" in out
    under = (8 * FUSED + OUTSIDE) * SLOT_S / (2 * _mini() * ridge / FLOPS)
    assert 10 < under < 40
    assert f"{under:.0f}x under the graph's floor" in out
    cross = FUSED * CPU_S * BW / 2
    assert f"reading {cross / 1e6:.1f}M bf16 parameters" in out
    assert "a layer holds 2,819,072 (MiniMind), 218,112,000 (Llama 3 8B)" in out
    assert _layer(512, 8, 2, 64, 1408) < cross < _layer(4096, 32, 8, 128, 14336)


def test_sync_crossing_kv_at_ridge_and_gptfast():
    out = _stdout()
    cross_sync = 2 * FUSED * CPU_S * BW / 2  # no overlap: graph saves L, int8 saves W / 2, tie at W = 2 L
    assert f"crossing if launches do not overlap GPU work: {cross_sync / 1e6:.0f}M parameters a layer" in out
    layer8 = _layer(4096, 32, 8, 128, 14336)
    assert 0.9 < layer8 / cross_sync < 1.2  # Llama 3 8B's layer sits at the no-overlap crossing
    ridge = round(FLOPS / BW)
    kv_tok = 2 * 8 * 2 * 64 * 2  # K and V, layers, KV heads, head size, bf16 bytes
    kv = ridge * kv_tok * 512
    w_s, floor = 2 * _mini() / BW, (8 * FUSED + OUTSIDE) * SLOT_S
    ctx = floor * BW / (ridge * kv_tok)
    assert (f"KV {kv / 2**20:.0f} MiB, read in {kv / BW * 1e6:.0f} us ({kv / BW / w_s:.0f}x the weight read); "
            f"it equals the graph floor at {ctx:.0f} tokens") in out
    assert kv / BW < floor and 512 < ctx < 1024  # under the floor at 512 tokens, above it before 1k
    assert f"eager {1e3 / 25.5:.1f} ms/token, compiled + graph {1e3 / 107.0:.1f} ms/token" in out
    md = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "markdown")
    assert "already\nfuses and graph-captures decode" in md and "{glue:text}`gk_tiny_cross_sync`" in md
