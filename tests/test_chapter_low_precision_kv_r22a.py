"""Section low_precision_kv-key-offset of "Low-precision KV cache": keys b + eps with a large constant offset.

The toy recomputed without mha_kit: the same seeded draws, attention written out (softmax over
q k^T / sqrt(d_h), query head i reads KV head i // 4), FP8 E4M3 through ml_dtypes' own cast with a
scale amax / 448, int8 as round(x / (amax / 127)), RoPE written out in the half-split layout of
transformers' rotate_half (pair i = dims i and i + d/2, angle position * 10000^(-2i/d)), and
compared with the chapter's stored table. Plus the properties the prose leans on, among them that
with RoPE the key bias does not cancel at full precision.
"""
import json
import pathlib
import re

import ml_dtypes
import numpy as np
import pytest
import chapter_outputs

NB = pathlib.Path(__file__).resolve().parents[1] / "book" / "low_precision_kv.ipynb"
E4M3_MAX = 448.0  # float8_e4m3fn: 1.75 * 2^8 (OCP FP8 E4M3)
OFFSETS = (0, 4, 16)
K_POS, Q_POS = np.arange(256), np.arange(240, 256)
ROWS = ("keys per tensor", "keys per channel", "int8 keys per tensor", "keys, offset subtracted",
        "values per tensor", "RoPE: keys per tensor", "RoPE: int8 keys", "RoPE: b off, rotate on read")


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


def _rope(x, positions, base=10000.0):
    d = x.shape[-1]
    angle = positions[:, None] * base ** (-np.arange(0, d, 2) / d)[None, :]  # (n, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _int8(x):
    scale = np.abs(x).max() / 127
    return np.rint(x / scale) * scale


def _fp8(x, axis=None):  # axis None: one scale; axis 1: one scale per (head, channel) over the tokens
    amax = np.abs(x).max(axis=axis, keepdims=axis is not None)
    scale = amax / E4M3_MAX
    return (x / scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) * scale


def _table():
    q, eps, v, signs = _draws()
    q_rot = _rope(q, Q_POS)
    rows = {}
    for size in OFFSETS:
        b = size * signs
        k = eps + b
        k_rot = _rope(k, K_POS)
        mean = k.mean(axis=1, keepdims=True)
        reads = {"keys per tensor": (q, k, _fp8(k), v), "keys per channel": (q, k, _fp8(k, 1), v),
                 "int8 keys per tensor": (q, k, _int8(k), v),
                 "keys, offset subtracted": (q, k, mean + _fp8(k - mean), v), "values per tensor": (q, k, k, _fp8(v)),
                 "RoPE: keys per tensor": (q_rot, k_rot, _fp8(k_rot), v),
                 "RoPE: int8 keys": (q_rot, k_rot, _int8(k_rot), v),
                 "RoPE: b off, rotate on read": (q_rot, k_rot, _rope(b + _fp8(k - b), K_POS), v)}
        for name, (q_in, k_exact, k_read, v_read) in reads.items():
            ref, w_ref = _attention(q_in, k_exact, v)
            out, w = _attention(q_in, k_read, v_read)
            rows[name, size] = (np.linalg.norm(out - ref) / np.linalg.norm(ref),
                                np.mean(w.argmax(-1) == w_ref.argmax(-1)))
    return rows


def _stored(marker):
    return chapter_outputs.printed(json.loads(NB.read_text()), marker).splitlines()


def test_stored_table_matches_recomputation():
    rows, lines = _table(), _stored("def minus_mean(")
    assert [ln[:29].strip() for ln in lines[2:]] == list(ROWS)
    for name in ROWS:
        line = next(ln for ln in lines if ln.startswith(name))
        cells = line[len(name):].split()  # "4.2%", "/", "95%", ...
        errors, top1s = cells[0::3], cells[2::3]
        for size, err, top in zip(OFFSETS, errors, top1s):
            e, t = rows[name, size]
            assert float(err.rstrip("%")) == pytest.approx(100 * e, abs=0.051), (name, size)
            assert float(top.rstrip("%")) == pytest.approx(100 * t, abs=0.51), (name, size)


def test_offset_cancels_without_rope_not_with_it_and_collapses_in_fp8():
    q, eps, v, signs = _draws()
    out0, _ = _attention(q, eps, v)
    out16, _ = _attention(q, eps + 16 * signs, v)
    assert np.abs(out16 - out0).max() < 1e-12
    q_rot = _rope(q, Q_POS)
    rot0, w0 = _attention(q_rot, _rope(eps, K_POS), v)
    rot16, w16 = _attention(q_rot, _rope(eps + 16 * signs, K_POS), v)
    moves = np.linalg.norm(rot16 - rot0) / np.linalg.norm(rot0)
    kept = np.mean(w16.argmax(-1) == w0.argmax(-1))
    assert moves > 1.0 and kept < 0.1  # with RoPE the bias is a position term: the output changes outright
    channel = (eps + 16 * signs)[0, :, 0]
    stored = _fp8(eps + 16 * signs)[0, :, 0]
    scale = np.abs(eps + 16 * signs).max() / E4M3_MAX
    assert 256 <= 16 / scale < 512  # the binade [256, 512), where E4M3's step is 2^8 / 8 = 32
    lines = _stored("def offset_keys(")
    assert lines[1] == (f"with RoPE, |b| = 16 against no offset: output moves by {100 * moves:.1f}%, "
                        f"top-1 token kept in {100 * kept:.0f}% of rows")
    assert lines[2] == (f"that channel: {np.unique(channel).size} different keys exact, "
                        f"{np.unique(stored).size} after FP8 E4M3 per tensor")
    rms = np.sqrt(np.mean((stored - channel) ** 2))
    assert lines[3] == (f"scale {scale:.4f}: 16 maps to {16 / scale:.0f}, in [256, 512), where the step is 32, "
                        f"i.e. {32 * scale:.2f} in key units (measured {np.diff(np.unique(stored)).min():.2f}); "
                        f"rounding error RMS {rms:.2f}")
    assert np.diff(np.unique(stored)).min() == pytest.approx(32 * scale)
    assert np.unique(stored).size < 10  # 256 keys on a handful of levels


def test_the_claims_of_the_prose():
    rows = _table()
    err = {key: e for key, (e, _) in rows.items()}
    assert err["keys per tensor", 16] > 10 * err["keys, offset subtracted", 16]
    assert err["keys per tensor", 0] < err["keys per tensor", 4] < err["keys per tensor", 16]
    assert err["keys per channel", 16] > 10 * err["keys, offset subtracted", 16]  # a scale does not help FP8
    assert err["keys per channel", 16] >= 0.9 * err["keys per tensor", 16]  # "no better than per tensor"
    assert err["int8 keys per tensor", 16] < err["keys per tensor", 16] / 5  # an integer grid keeps its step
    assert err["RoPE: int8 keys", 16] < err["RoPE: keys per tensor", 16] / 5
    assert err["RoPE: keys per tensor", 0] < err["RoPE: keys per tensor", 16] < err["keys per tensor", 16]
    assert err["RoPE: b off, rotate on read", 16] < err["RoPE: keys per tensor", 16] / 5  # bias from the checkpoint
    assert err["values per tensor", 16] < err["keys per tensor", 0]
    assert all(rows["values per tensor", s][1] == 1.0 for s in OFFSETS)  # weights come from the keys alone
    assert err["keys, offset subtracted", 16] == pytest.approx(err["keys, offset subtracted", 0], rel=1e-6)


def test_section_label_and_no_followup_class_in_its_dropdowns():
    nb = json.loads(NB.read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    start = text.index("(low_precision_kv-key-offset)=")
    following = re.search(r"\n\(low_precision_kv-[a-z0-9-]+\)=\n#", text[start + 1:])  # the next section's label
    section = text[start:start + 1 + following.start()] if following else text[start:text.index("## Summary", start)]
    assert section.count(":class: dropdown\n") == 3 and "dropdown followup" not in section
    assert "cancels in the softmax" not in section  # the claim the review overturned for Qwen2
    assert "R_{j-i}" in section and "This holds only without RoPE" in section
    box = section[section.index("In the interview"):section.index("Follow-up")]
    assert "with RoPE it is a position-dependent term" in box and "lp_off_err_int8_keys_16" in box
