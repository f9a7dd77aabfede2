"""Section weight_quantization-gguf-lineage: ggml's 2023 4-bit blocks, Q4_0_4_4, and a 34B model on a 16 GB card.

Recomputed here from the struct layouts themselves (ggml src/ggml.c at commit 818d7a7d, 22 April 2023, and
ggml-common.h today; block_q4_0x4 from llama.cpp PR #5780) and from CodeLlama-34B's config.json (d 8192,
48 layers, 64 heads, 8 KV heads of 128, d_ff 22016, vocabulary 32000, untied head), without the kit:
bits per weight = 8 * bytes per block / weights per block; parameters = 2 V d + L (attention + 3 d d_ff + 2 d) + d;
cache = tokens * 2 L h_kv d_h * bytes, the Q4 cache 4 bits plus one fp16 scale per 32 values."""
import json
import pathlib

import numpy as np
import pytest

from chapter_outputs import glued, notebook

NB = pathlib.Path(__file__).parents[1] / "book" / "weight_quantization.ipynb"

# name: (weights per block, bytes of each field), from the C structs
STRUCTS = {
    "q4_0 (Apr 2023)": (32, (4, 16)),  # float d; uint8_t qs[QK4_0 / 2]
    "q4_1 (Apr 2023)": (32, (4, 4, 16)),  # float d, m; qs[16]
    "q4_2 (Apr 2023)": (16, (2, 8)),  # ggml_fp16_t d; qs[QK4_2 / 2], QK4_2 = 16
    "q4_3 (Apr 2023)": (16, (2, 2, 8)),  # fp16 d, m; qs[8]
    "q4_0 (now)": (32, (2, 16)),
    "q4_1 (now)": (32, (2, 2, 16)),
    "q8_0 (now)": (32, (2, 32)),
    "q4_0x4 (Q4_0_4_4)": (128, (8, 64)),  # ggml_half d[4]; uint8_t qs[QK4_0 * 2]
}
K_QUANTS = {"q2_K": 84, "q3_K": 110, "q4_K": 144, "q5_K": 176, "q6_K": 210}  # bytes per 256 weights

D, L, H, H_KV, D_H, D_FF, V = 8192, 48, 64, 8, 128, 22016, 32000
GIB = 2**30


def _stdout(cell_id):
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    assert not [o for o in cell["outputs"] if o.get("name") == "stderr"]
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").strip().splitlines()


def test_bits_per_weight_table():
    lines = _stdout("weight_quantization-gguf-lineage-2")
    rows = {line[:19].strip(): line[19:].split() for line in lines[1:9]}
    assert set(rows) == set(STRUCTS)
    for name, (weights, fields) in STRUCTS.items():
        cols = rows[name]
        assert int(cols[0]) == weights and int(cols[1]) == sum(fields)
        assert float(cols[2]) == pytest.approx(8 * sum(fields) / weights, abs=6e-4)
    # the removed pair cost what the fp32-scaled q4_0/q4_1 did; today's fp16 q4_0/q4_1 cost less
    assert rows["q4_2 (Apr 2023)"][2] == rows["q4_0 (Apr 2023)"][2]
    assert rows["q4_3 (Apr 2023)"][2] == rows["q4_1 (Apr 2023)"][2]
    assert float(rows["q4_0 (now)"][2]) < float(rows["q4_0 (Apr 2023)"][2])
    assert float(rows["q4_1 (now)"][2]) < float(rows["q4_1 (Apr 2023)"][2])
    nb = notebook("weight_quantization")
    for key, name in (("q40old", "q4_0 (Apr 2023)"), ("q41old", "q4_1 (Apr 2023)"), ("q42", "q4_2 (Apr 2023)"),
                      ("q43", "q4_3 (Apr 2023)"), ("q41", "q4_1 (now)"), ("q0x4", "q4_0x4 (Q4_0_4_4)")):
        weights, fields = STRUCTS[name]
        assert glued(nb, f"gl41_bpw_{key}") == f"{8 * sum(fields) / weights:.4g}", key
    # Q4_0_4_4 has exactly Q4_0's bits
    assert float(rows["q4_0x4 (Q4_0_4_4)"][2]) == float(rows["q4_0 (now)"][2]) == 4.5
    kq = dict(part.split() for part in lines[9].split(": ", 1)[1].split(", "))
    for name, nbytes in K_QUANTS.items():
        assert float(kq[name]) == pytest.approx(8 * nbytes / 256, abs=6e-4)


def test_skewed_block_q4_1_beats_q4_0():
    x = np.random.default_rng(41).uniform(0.2, 1.0, size=32)
    d0 = x[np.argmax(np.abs(x))] / -8
    q0 = np.clip(np.floor(x / d0 + 8.5), 0, 15)
    d1, m1 = (x.max() - x.min()) / 15, x.min()
    q1 = np.clip(np.floor((x - m1) / d1 + 0.5), 0, 15)
    e0 = np.sqrt(np.mean((d0 * (q0 - 8) - x) ** 2))
    e1 = np.sqrt(np.mean((d1 * q1 + m1 - x) ** 2))
    line = _stdout("weight_quantization-gguf-lineage-2")[10]
    assert f"codes used q4_0 {len(np.unique(q0))}, q4_1 {len(np.unique(q1))}" in line
    assert f"RMS error q4_0 {e0:.4f}, q4_1 {e1:.4f}" in line
    assert len(np.unique(q0)) <= 8 < len(np.unique(q1)) and e1 < e0
    # April 2023 q4_0 (ggml 818d7a7d): d = amax / 7, code round(x / d) + 8, never code 0 (15 levels)
    dold = np.abs(x).max() / 7
    qold = np.round(x / dold) + 8
    eold = np.sqrt(np.mean((dold * (qold - 8) - x) ** 2))
    assert qold.min() >= 1 and qold.max() <= 15
    line = _stdout("weight_quantization-gguf-lineage-2")[11]
    assert line == f"April 2023 q4_0 (d = amax/7): codes used {len(np.unique(qold))}, RMS error {eold:.4f}"
    nb = notebook("weight_quantization")
    want = {"gl41_codes_q40": f"{len(np.unique(q0))}", "gl41_codes_q41": f"{len(np.unique(q1))}",
            "gl41_codes_q40old": f"{len(np.unique(qold))}", "gl41_err_old_ratio": f"{eold / e0:.2f}",
            "gl41_err_ratio": f"{e0 / e1:.1f}"}
    assert {k: glued(nb, k) for k in want} == want


def _params():
    attn = D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D
    return 2 * V * D + L * (attn + 3 * D * D_FF + 2 * D) + D


def _cache(tokens, mode):
    elems = tokens * 2 * L * H_KV * D_H
    return {"fp16": elems * 2, "fp8": elems, "Q4": elems // 2 + (elems // 32) * 2}[mode]


def test_sizing_table():
    lines = _stdout("weight_quantization-gguf-lineage-4")
    p = _params()
    assert p == 33_743_970_304
    assert lines[0] == f"CodeLlama-34B: {p:,} parameters; cache {2 * L * H_KV * D_H * 2 // 1024} KiB per token in fp16"
    assert 2 * L * H_KV * D_H * 2 == 192 * 1024
    budget = 15 * GIB
    ctx = (4096, 10240, 16384)
    gptq = (4 * 128 + 4 + 16) / 128
    gptq3 = (3 * 128 + 3 + 16) / 128
    expected = [("EXL2", 2.5), ("EXL2", 2.7), ("EXL2", 3.0), ("EXL2", 4.0), ("GPTQ 4b g128", gptq),
                ("GPTQ 3b g128", gptq3)]
    fits = {}
    for line, (label, bpw) in zip(lines[2:8], expected, strict=True):
        assert line[:14].strip() == label
        cols = line[14:].replace("*", " * ").split()
        assert float(cols[0]) == pytest.approx(bpw, abs=6e-4)
        assert float(cols[1]) == pytest.approx(p * bpw / 8 / GIB, abs=0.005)
        vals = [c for c in cols[2:]]
        i = 0
        for mode in ("fp16", "Q4"):
            for n in ctx:
                tot = p * bpw / 8 + _cache(n, mode)
                assert float(vals[i]) == pytest.approx(tot / GIB, abs=0.005)
                star = i + 1 < len(vals) and vals[i + 1] == "*"
                assert star == (tot <= budget), (label, bpw, n, mode)
                fits[bpw, n, mode] = star
                i += 2 if star else 1
    # turboderp's answer fits; 4 bits does not, at any context
    assert fits[2.7, 10240, "fp16"] and not any(fits[4.0, n, m] for n in ctx for m in ("fp16", "Q4"))
    # a 3-bit g128 GPTQ (about 3.15 bits, 12.4 GiB) fits with a 10K fp16 cache, just not in ExLlamaV2
    assert fits[gptq3, 10240, "fp16"]
    # the values the prose renders; gl41_spare27 is the spare beyond the 1 GiB held back at 2.7 bits and 10K
    want = {"gl41_params_b": f"{p / 1e9:.1f}", "gl41_w27": f"{p * 2.7 / 8 / GIB:.1f}",
            "gl41_w40": f"{p * 4.0 / 8 / GIB:.1f}", "gl41_c10": f"{_cache(10240, 'fp16') / GIB:.2f}",
            "gl41_t27_10": f"{(p * 2.7 / 8 + _cache(10240, 'fp16')) / GIB:.1f}",
            "gl41_t30_16": f"{(p * 3.0 / 8 + _cache(16384, 'fp16')) / GIB:.1f}",
            "gl41_spare27": f"{(budget - p * 2.7 / 8 - _cache(10240, 'fp16')) / GIB:.1f}",
            "gl41_gptq3_bpw": f"{gptq3:.2f}", "gl41_gptq3_w": f"{p * gptq3 / 8 / GIB:.1f}",
            "gl41_gptq3_t10": f"{(p * gptq3 / 8 + _cache(10240, 'fp16')) / GIB:.1f}",
            "gl41_t30_16q4": f"{(p * 3.0 / 8 + _cache(16384, 'Q4')) / GIB:.1f}"}
    nb = notebook("weight_quantization")
    assert {k: glued(nb, k) for k in want} == want
    caches = lines[8]
    for n in ctx:
        assert (f"{n // 1024}K fp16 {_cache(n, 'fp16') / GIB:.3f}, fp8 {_cache(n, 'fp8') / GIB:.3f}, "
                f"Q4 {_cache(n, 'Q4') / GIB:.3f}") in caches
