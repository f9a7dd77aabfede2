"""Sections weight_quantization-w4a4-batch-one and weight_quantization-layer-sensitivity.

The W4A4 cost model is recomputed from Llama 3 8B's config.json shape, the A100 40GB datasheet (1,555 GB/s,
312 TFLOPS 16-bit, 1,248 TOPS INT4 dense), CUTLASS's default SM80 int4 tile (128 x 256 x 128) and the kernel
count read from QuaRot's e2e model; the sensitivity toy is rebuilt with its own symmetric int4 rounding. Both are
compared with the chapter's stored outputs."""
import json
import math
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "weight_quantization.ipynb"
D, HEADS, KV_HEADS, HEAD_DIM, FF = 4096, 32, 8, 128, 14336  # Llama 3 8B config.json
BW, F16, F4 = 1555e9, 312e12, 1248e12  # A100 40GB SXM datasheet
TILE_M, TILE_N, SMS = 128, 256, 108
K_EXTRA = 4 * 5 + 7 + 4  # 4 eager quantizers of 5 kernels (the fp16 cast is a no-op), 7 dequants, 2 Hadamards of ~2
K_KV = 2 * 10 + 1  # asym_quantize_and_pack_i4 for K and V, about 10 ops each, plus the Hadamard on K


def _cell_lines(marker):
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"]))
    text = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
    return text.strip().splitlines()


def _shapes():
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return [(D, q), (D, kv), (D, kv), (q, D), (D, FF), (D, FF), (FF, D)]  # (in, out): q k v o gate up down


def _model():
    shapes = _shapes()
    p = sum(a * b for a, b in shapes)
    outs = sum(b for _, b in shapes)
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    tok = 24 * (2 * D + q + FF) + 6 * outs + 8 * (q + FF)
    kv16, kv4 = 4 * kv, kv + 8 * KV_HEADS  # int4 K and V plus an fp16 scale and zero per head

    def t16(n, s):
        return max((2 * p + n * s * kv16) / BW, 2 * p * n / F16)

    def t4(n, s, tau):
        pad = TILE_M * math.ceil(n / TILE_M)
        return max((p / 2 + 2 * outs + n * s * kv4) / BW, 2 * p * pad / F4) + K_EXTRA * tau + n * tok / BW

    return p, tok, t16, t4


def test_layer_weights_and_savings():
    p, tok, _, _ = _model()
    assert p == 218_103_808  # 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336
    lines = _cell_lines("TILE_M, TILE_N = 128, 256")
    assert lines[0] == f"Llama 3 8B, one layer: {p / 1e6:.1f} M linear weights; A100 40GB: 1555 GB/s, INT4 1248 TOPS"
    assert lines[1] == (f"weight read per layer: fp16 {2 * p / BW * 1e6:.0f} us, int4 {p / 2 / BW * 1e6:.0f} us, "
                        f"saved {1.5 * p / BW * 1e6:.0f} us")
    assert lines[2] == f"extra kernels per layer: 31 (+ about {K_KV} for an eager 4-bit KV cache); extra bytes per token and layer: {tok / 1e6:.2f} MB = {tok / BW * 1e6:.2f} us"


def test_tile_padding_blocks_and_ridge():
    lines = _cell_lines("TILE_M, TILE_N = 128, 256")
    assert "0.8% of the MACs are useful" in lines[3]
    blocks = [math.ceil(out / TILE_N) for _, out in _shapes()]
    assert blocks == [16, 4, 4, 16, 56, 56, 16]
    assert lines[4] == ("thread blocks at batch <= 128: q 16, k 4, v 4, o 16, gate 56, up 56, down 16 "
                        f"(the A100 has {SMS} SMs)")
    assert lines[5] == f"INT4 ridge (0.5 B and 2n ops per weight): n* = {round(0.5 * F4 / (2 * BW))} tokens"
    assert round(0.5 * F4 / (2 * BW)) == 201


def test_break_even_table():
    _, _, t16, t4 = _model()
    rows = _cell_lines("TILE_M, TILE_N = 128, 256")[7:12]
    expected = {2: ("2.12x", 1, 1), 4: ("1.45x", 1, 1), 6: ("1.10x", 1, 1), 8: ("0.89x", 29, 6), 10: ("0.74x", 77, 14)}
    assert len(rows) == len(expected) == 5  # a short table must not pass the zip below
    for row, (us, (speed, be1k, be4k)) in zip(rows, expected.items()):
        tau = us * 1e-6
        got = [next(n for n in range(1, 1025) if t4(n, s, tau) <= t16(n, s)) for s in (1024, 4096)]
        assert got == [be1k, be4k]
        assert f"{t16(1, 1024) / t4(1, 1024, tau):.2f}x" == speed
        assert row.split() == [f"{us}us", f"{K_EXTRA * us}us", speed, str(be1k), str(be4k)]


def _int4_rows(w):
    scale = np.abs(w).max(axis=1, keepdims=True) / 7  # symmetric int4, one scale per output row
    return np.clip(np.rint(w / scale), -7, 7) * scale


def test_sensitivity_toy():
    rng = np.random.default_rng(36)
    stack = [rng.normal(0, 1, size=(64, 64)) / 8 for _ in range(4)] + [rng.normal(0, 1, size=(16, 64)) / 8]
    stack[2][:, :2] *= 30.0
    x = rng.normal(0, 1, size=(256, 64))

    def logp(ws):
        h = x
        for w in ws[:-1]:
            h = np.maximum(h @ w.T, 0) * math.sqrt(2)
        z = h @ ws[-1].T
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    ref = logp(stack)

    def kl(qset):
        lp = logp([_int4_rows(w) if i in qset else w for i, w in enumerate(stack)])
        return float(np.mean(np.sum(np.exp(ref) * (ref - lp), axis=1)))

    single = {i: kl({i}) for i in range(5)}
    rank = sorted(single, key=single.get, reverse=True)
    lines = _cell_lines("sens_rng = np.random.default_rng(36)")
    assert lines[:5] == [f"layer {i} alone in int4: KL {single[i]:.5f}" for i in rank]
    assert rank[0] == 2
    kl_all = kl(set(range(5)))
    assert lines[5] == f"all 5 layers in int4: KL {kl_all:.5f} (sum of the singles {sum(single.values()):.5f})"
    keep, now = [], kl_all
    for i in rank:
        if now <= 0.1:
            break
        keep.append(i)
        now = kl(set(range(5)) - set(keep))
    assert keep == [2, 1]
    share = sum(stack[i].size for i in keep) / sum(w.size for w in stack)
    assert lines[-2] == f"keep-set {keep}: {share:.0%} of the weights stay 16-bit; target KL 0.1 met: True"
    sum_keep, sums = [], [sum(single.values())]  # the summing rule the [M] follow-up rejects
    for i in rank:
        if sums[-1] <= 0.1:
            break
        sum_keep.append(i)
        sums.append(sum(v for j, v in single.items() if j not in sum_keep))
    assert sum_keep == [2, 1, 3] and len(sum_keep) == len(keep) + 1
    assert lines[-1] == (f"summing rule keeps {sum_keep} (sum of the remaining singles: "
                         + " -> ".join(f"{v:.3f}" for v in sums[1:]) + f"); measured greedy keeps {keep}")
