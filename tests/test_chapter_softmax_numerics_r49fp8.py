"""Section softmax_numerics-fp8-scales: where the scales of FP8 attention go, recomputed without mha_kit.

E4M3 comes from ml_dtypes (float8_e4m3fn: largest 448, smallest subnormal 2^-9, round to nearest even). The kernel
constants are the sources' own: FlashAttention-3/4 emit P~ with max_offset 8 for FP8 (hopper/softmax.h,
flash_attn/cute/flash_fwd_sm100.py at commit 0251105), SageAttention subtracts S_FP8_OFFSET = 8.807
(csrc/qattn/attn_utils.cuh), FA4's lazy-rescale threshold is 8 for 16-bit inputs and was 4 for FP8 before PR #2717.
The attention loop is written again here, tile by tile, on the chapter's seeded inputs."""
import math

import ml_dtypes
import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("softmax_numerics")
LABEL = "softmax_numerics-fp8-scales"
MARKER_FOLD = "# FP8 attention with every scale folded"
MARKER_LAZY = "# FA4's lazy rescale against E4M3's ceiling"
MARKER_ESS = "# the ESS argument"
E4M3 = ml_dtypes.float8_e4m3fn
E4M3_MAX = float(ml_dtypes.finfo(E4M3).max)


def e4m3(x):  # round float64 numbers to E4M3 (through float32, as the chapter's helper does)
    return np.asarray(x, dtype=np.float32).astype(E4M3).astype(np.float64)


def quantize(x):  # per-tensor: codes and the descale amax / 448
    scale = np.abs(x).max() / E4M3_MAX
    return e4m3(x / scale), scale


def test_folded_kernel_error():
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((rows, 64)) * 2.0 for rows in (8, 256, 256))
    (q8, dq), (k8, dk), (v8, dv) = quantize(q), quantize(k), quantize(v)
    c = dq * dk * math.log2(math.e) / 8.0  # 1 / sqrt(64)
    out = np.zeros((8, 64))
    for i in range(8):  # one row at a time, keys in tiles of 64
        m, ell, acc = -math.inf, 0.0, np.zeros(64)
        for j in range(0, 256, 64):
            s = k8[j:j + 64] @ q8[i]
            m_new = max(m, s.max())
            alpha = 2.0 ** (c * (m - m_new)) if m > -math.inf else 0.0
            p = 2.0 ** (c * (s - m_new) + 8)
            ell, acc, m = ell * alpha + p.sum(), acc * alpha + e4m3(p) @ v8[j:j + 64], m_new
        out[i] = acc * dv / ell
    s_true = (q8 * dq) @ (k8 * dk).T / 8.0
    w = np.exp(s_true - s_true.max(axis=1, keepdims=True))
    ref = (w / w.sum(axis=1, keepdims=True)) @ (v8 * dv)
    err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    text = chapter_outputs.printed(NB, MARKER_FOLD)
    assert "folded vs dequantized first: largest difference below 1e-12" in text
    assert f"relative error {err:.2%} (the rounding of P~ alone)" in text
    assert chapter_outputs.glued(NB, "sn_fp8_err_p") == f"{err:.1%}"
    assert 0.001 < err < 0.03  # E4M3's half step is 6.25%; averaged over many keys the error is smaller


def test_underflow_cut_for_each_static_scale():
    tiny = float(ml_dtypes.finfo(E4M3).smallest_subnormal)
    assert tiny == 2.0**-9 and float(ml_dtypes.finfo(E4M3).tiny) == 2.0**-6
    assert e4m3([2.0**-10])[0] == 0.0 and e4m3([2.0**-10 * 1.01])[0] == tiny  # half a subnormal rounds to even, 0
    text = chapter_outputs.printed(NB, MARKER_FOLD)
    for scale_log2, key in ((0, "1"), (8, "256"), (8.807, "448")):
        cut = 10 + scale_log2  # P~ below 2^-(10 + log2 scale) becomes 0
        assert chapter_outputs.glued(NB, f"sn_fp8_nats_{key}") == f"{cut * math.log(2):.1f}"
        assert f"2^-{cut:.1f}" in text
    assert chapter_outputs.glued(NB, "sn_fp8_zero_256") == "18"
    assert 2.0**8.807 < E4M3_MAX < 2.0**8.808  # SageAttention's offset stays just under E4M3's largest number


def test_lazy_rescale_headroom():
    headroom = math.log2(E4M3_MAX) - 8
    assert chapter_outputs.glued(NB, "sn_fp8_headroom") == f"{headroom:.3f}" == "0.807"
    text = chapter_outputs.printed(NB, MARKER_LAZY)
    for name, offset, tau, fits in (("FA4, 16-bit inputs (P~ in bf16)", 0, 8, True),
                                    ("FA4, E4M3 before PR #2717", 8, 4, False),
                                    ("FA4, E4M3 after PR #2717", 4, 4, True),
                                    ("FA4, FP8 after PR #2731 (at 0251105)", 8, 0, True)):
        line = next(ln for ln in text.splitlines() if ln.startswith(name))
        assert line.split()[-2:] == [f"{2 ** (offset + tau):,}", str(fits)], line
        limit = math.log2(E4M3_MAX) if "16-bit" not in name else 128  # bf16's largest is about 2^128
        assert (offset + tau < limit) == fits
    e5m2_max = float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).max)  # 57344: E5M2 absorbs 2^12
    line = next(ln for ln in text.splitlines() if ln.startswith("FA4, E5M2 before and after PR #2717"))
    assert line.split()[-2:] == ["4,096", "True"] and 8 + 4 < math.log2(e5m2_max)
    assert chapter_outputs.glued(NB, "sn_fp8_e5m2_log2") == f"{math.log2(e5m2_max):.1f}" == "15.8"
    bound = math.log2(E4M3_MAX) - 4  # offset + tau < log2 448 with tau = 4
    assert chapter_outputs.glued(NB, "sn_fp8_off_bound") == f"{bound:.3f}" == "4.807"
    assert chapter_outputs.glued(NB, "sn_fp8_off_int") == str(math.floor(bound)) == "4"
    kept = E4M3_MAX / 4096
    assert chapter_outputs.glued(NB, "sn_fp8_kept") == f"{kept:.1%}" == "10.9%"
    assert chapter_outputs.glued(NB, "sn_fp8_under") == "89%"


def test_stale_max_row():
    s = np.concatenate([np.zeros(64), np.full(63, -6.0), [3.5]])
    v = np.random.default_rng(2).standard_normal((128, 16))
    w = 2.0 ** (s - 3.5)
    exact = w @ v / w.sum()
    p = 2.0 ** (s + 8)  # stale max 0, offset 8
    lazy = e4m3(np.minimum(p, E4M3_MAX)) @ v / p.sum()
    fresh = 2.0 ** (s - 3.5 + 8)
    eager = e4m3(fresh) @ v / fresh.sum()
    err = [np.linalg.norm(x - exact) / np.linalg.norm(exact) for x in (lazy, eager)]
    assert chapter_outputs.glued(NB, "sn_fp8_stale_err") == f"{err[0]:.0%}"
    assert chapter_outputs.glued(NB, "sn_fp8_eager_err") == f"{err[1]:.1%}"
    assert err[0] > 10 * err[1]


def test_ess_rows():
    v = np.random.default_rng(0).standard_normal((512, 128))
    v_hat = quantize(v)[0] * (np.abs(v).max() / E4M3_MAX)
    sizes = []
    for p in (np.eye(1, 512)[0], np.full(512, 1 / 512)):
        o, o8 = p @ v, p @ v_hat
        sizes.append((np.sqrt(np.mean(o**2)), np.sqrt(np.mean((o8 - o) ** 2))))
    (one_o, one_e), (flat_o, flat_e) = sizes
    text = chapter_outputs.printed(NB, MARKER_ESS)
    assert f"absolute error {one_e / flat_e:.1f}x, |O| {one_o / flat_o:.1f}x" in text
    assert chapter_outputs.glued(NB, "sn_fp8_ess_err_x") == f"{one_e / flat_e:.0f}"
    assert chapter_outputs.glued(NB, "sn_fp8_ess_rel_one") == f"{one_e / one_o:.1%}"
    assert chapter_outputs.glued(NB, "sn_fp8_ess_rel_flat") == f"{flat_e / flat_o:.1%}"
    assert chapter_outputs.glued(NB, "sn_fp8_ess_sqrt") == f"{math.sqrt(512):.1f}"
    # LeetCUDA §27.3.7's simulation figures and their ratio (0.22 / 0.015 = 14.7)
    for key, want in (("sn_fp8_lc_tokens", "8,192"), ("sn_fp8_lc_dh", "128"), ("sn_fp8_lc_causal", "0.22"),
                      ("sn_fp8_lc_dense", "0.015"), ("sn_fp8_lc_rel_causal", "5.5%"), ("sn_fp8_lc_rel_dense", "9.1%"),
                      ("sn_fp8_lc_ratio", f"{0.22 / 0.015:.0f}")):
        assert chapter_outputs.glued(NB, key) == want, key
    assert "14.7x" in text
    assert abs(one_e / one_o - flat_e / flat_o) < 0.01  # the same relative error on both rows
    assert 15 < one_e / flat_e < 30  # the absolute error follows sqrt(ESS), sqrt(512) = 22.6


def test_section_cites_links_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="softmax_numerics-ragged-rows")
    assert text.startswith(f"({LABEL})=\n## FP8 attention: where each scale goes")
    assert "PyTorch simulation" in text and "makes a dequantization pass over memory" in text
    assert "running maximum kept in scaled log2" in text and "one add per score" in text
    chapter_outputs.assert_cited(text, ["fa3fp8code", "fa4fp8scaling", "sageattncode", "leetcudach27",
                                        "zhang2025sageattention2"])
    for ref in ("attention_backends-low-precision", "softmax_numerics-online-cost", "attention_cost-merge",
                "softmax_numerics-formats", "attention_backends-flashattention4"):
        assert f"{{ref}}`{ref}`" in text and ref in chapter_outputs.book_labels(), ref
    assert "softmax_scale_log2 *= q_descale * k_descale" in text and "`S_FP8_OFFSET = 8.807f`" in text
    assert text.count("{admonition} In the interview") == 1 and text.count(":class: dropdown") == 3
    assert "Drill:" in text and "Follow-up:" in text
