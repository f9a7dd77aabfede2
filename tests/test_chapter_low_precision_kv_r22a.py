"""Section low_precision_kv-key-offset of "Low-precision KV cache": keys b + eps with a large constant offset.

The toy recomputed without mha_kit: the same seeded draws, attention written out (softmax over
q k^T / sqrt(d_h), query head i reads KV head i // 4), FP8 E4M3 through ml_dtypes' own cast with a
scale amax / 448, and compared with the chapter's stored table. Plus the properties the prose leans on.
"""
import json
import pathlib

import ml_dtypes
import numpy as np
import pytest
import chapter_outputs

NB = pathlib.Path(__file__).resolve().parents[1] / "book" / "low_precision_kv.ipynb"
E4M3_MAX = 448.0  # float8_e4m3fn: 1.75 * 2^8 (OCP FP8 E4M3)
OFFSETS = (0, 4, 16)


def _draws():
    rng = np.random.default_rng(22)
    q = 2 * rng.standard_normal((8, 16, 64))
    eps = rng.standard_normal((2, 256, 64))
    v = rng.standard_normal((2, 256, 64))
    signs = rng.choice([-1.0, 1.0], size=(2, 1, 64))
    return q, eps, v, signs


def _attention(q, k, v):
    k_per_head, v_per_head = np.repeat(k, 4, axis=0), np.repeat(v, 4, axis=0)  # heads [K0 x4, K1 x4]
    scores = q @ k_per_head.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w @ v_per_head, w


def _fp8(x, axis=None):  # axis None: one scale; axis 1: one scale per (head, channel) over the tokens
    amax = np.abs(x).max(axis=axis, keepdims=axis is not None)
    scale = amax / E4M3_MAX
    return (x / scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) * scale


def _table():
    q, eps, v, signs = _draws()
    rows = {}
    for size in OFFSETS:
        k = eps + size * signs
        ref, w_ref = _attention(q, k, v)
        mean = k.mean(axis=1, keepdims=True)
        reads = {"keys per tensor": (_fp8(k), v), "keys per channel": (_fp8(k, 1), v),
                 "keys, offset subtracted": (mean + _fp8(k - mean), v), "values per tensor": (k, _fp8(v))}
        for name, (k_read, v_read) in reads.items():
            out, w = _attention(q, k_read, v_read)
            rows[name, size] = (np.linalg.norm(out - ref) / np.linalg.norm(ref),
                                np.mean(w.argmax(-1) == w_ref.argmax(-1)))
    return rows


def _stored(marker):
    return chapter_outputs.printed(json.loads(NB.read_text()), marker).splitlines()


def test_stored_table_matches_recomputation():
    rows, lines = _table(), _stored("def read_back(")
    for name in ("keys per tensor", "keys per channel", "keys, offset subtracted", "values per tensor"):
        line = next(ln for ln in lines if ln.startswith(name))
        cells = line[len(name):].split()  # "4.2%", "/", "95%", ...
        errors, top1s = cells[0::3], cells[2::3]
        for size, err, top in zip(OFFSETS, errors, top1s):
            e, t = rows[name, size]
            assert float(err.rstrip("%")) == pytest.approx(100 * e, abs=0.051), (name, size)
            assert float(top.rstrip("%")) == pytest.approx(100 * t, abs=0.51), (name, size)


def test_offset_cancels_at_full_precision_and_collapses_in_fp8():
    q, eps, v, signs = _draws()
    out0, _ = _attention(q, eps, v)
    out16, _ = _attention(q, eps + 16 * signs, v)
    assert np.abs(out16 - out0).max() < 1e-12
    channel = (eps + 16 * signs)[0, :, 0]
    stored = _fp8(eps + 16 * signs)[0, :, 0]
    lines = _stored("def offset_keys(")
    assert lines[1] == (f"that channel: {np.unique(channel).size} different keys exact, "
                        f"{np.unique(stored).size} after FP8 E4M3 per tensor")
    assert np.unique(stored).size < 10  # 256 keys on a handful of levels


def test_the_claims_of_the_prose():
    rows = _table()
    assert rows["keys per tensor", 16][0] > 10 * rows["keys, offset subtracted", 16][0]
    assert rows["keys per tensor", 0][0] < rows["keys per tensor", 4][0] < rows["keys per tensor", 16][0]
    assert rows["keys per channel", 16][0] > 10 * rows["keys, offset subtracted", 16][0]  # a scale does not help FP8
    assert rows["values per tensor", 16][0] < rows["keys per tensor", 0][0]
    assert all(rows["values per tensor", s][1] == 1.0 for s in OFFSETS)  # weights come from the keys alone
    assert rows["keys, offset subtracted", 16][0] == pytest.approx(rows["keys, offset subtracted", 0][0], rel=1e-6)


def test_section_label_and_no_followup_class_in_its_dropdowns():
    nb = json.loads(NB.read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    start = text.index("(low_precision_kv-key-offset)=")
    section = text[start:text.index("## Summary", start)]
    assert section.count(":class: dropdown\n") == 3 and "dropdown followup" not in section
