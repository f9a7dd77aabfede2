"""weight_quantization r48: low-rank factorization of the weights (weight_quantization-low-rank).

Recomputed from the formulas and Llama 3 8B's shape written out (config.json: hidden 4096, intermediate 14336):
the break-even rank mn/(m + n), the ranks whose bf16 factors take 8- and 4-bit bytes, the toy spectra against an
INT4 round trip written here, the activation-aware errors (SVD-LLM's optimum through a QR of X instead of the
chapter's Cholesky factor), and the bytes of factors quantized to INT4.
"""
import numpy as np

from tests.chapter_outputs import assert_cited, book_labels, glued, notebook, printed, section

NB = notebook("weight_quantization")
M, N = 4096, 14336  # Llama 3 8B gate/up projection (config.json)
INT4_G128 = 4 + 16 / 128  # int4 codes plus an fp16 scale per 128 weights
INT4_G64 = 4 + 16 / 64


def _g(key):
    return glued(NB, key)


def test_break_even_and_matched_ranks():
    assert M * N == 58_720_256 and M + N == 18_432
    even = M * N / (M + N)
    assert _g("r48_even") == f"{even:,.0f}" == "3,186"
    assert _g("r48_even_share") == f"{even / M:.0%}" == "78%"
    # 16 r (m + n) = b m n
    assert int(4 * M * N / (16 * (M + N))) == 796 and _g("r48_rank_4") == "796"
    assert int(INT4_G128 * M * N / (16 * (M + N))) == 821 and _g("r48_rank_int4") == "821"
    assert _g("r48_half_share") == f"{2048 * (M + N) / (M * N):.0%}" == "64%"
    out = printed(NB, "lr48_even = ")
    assert "saves only below r = mn/(m + n) = 3185.8, 77.8% of the full rank" in out
    assert "bytes of 8-bit W: rank 1592" in out


def _int4(w, group):  # symmetric round-to-nearest, scale amax / 7 per group of input columns
    g = w.reshape(w.shape[0], -1, group)
    scale = np.abs(g).max(axis=-1, keepdims=True) / 7
    return (np.clip(np.rint(g / scale), -7, 7) * scale).reshape(w.shape)


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _toys():
    rng = np.random.default_rng(0)  # the chapter's draws, in its order
    flat = rng.standard_normal((128, 448))
    low = rng.standard_normal((128, 8)) @ rng.standard_normal((8, 448)) / np.sqrt(8) + 0.1 * rng.standard_normal((128, 448))
    x = rng.standard_normal((1024, 448))
    x[:, :8] *= 20.0
    return flat, low, x


RANK = int(INT4_G64 * 128 * 448 / (16 * (128 + 448)))


def test_toy_spectra_against_int4():
    assert RANK == 26 and _g("r48_toy_rank") == "26"
    flat, low, _ = _toys()
    for w, kept_key, svd_key, q_key in ((flat, "r48_flat_kept", "r48_flat_svd", "r48_flat_int4"),
                                        (low, "r48_lr_kept", "r48_lr_svd", "r48_lr_int4")):
        ev = np.sort(np.linalg.eigvalsh(w @ w.T))[::-1]  # squared singular values
        kept = ev[:RANK].sum() / ev.sum()
        fmt = ".0%" if kept_key == "r48_flat_kept" else ".1%"
        assert _g(kept_key) == format(kept, fmt)
        assert _g(svd_key) == f"{np.sqrt(1 - kept):.2f}"
        assert _g(q_key) == f"{_rel(_int4(w, 64), w):.2f}"
    assert float(_g("r48_flat_svd")) > 5 * float(_g("r48_flat_int4"))  # flat: INT4 wins at equal bytes
    assert float(_g("r48_lr_svd")) < float(_g("r48_lr_int4"))  # steep spectrum: the SVD wins


def test_activation_aware_errors():
    flat, _, x = _toys()
    y = x @ flat.T

    def trunc(w):
        u, s, vt = np.linalg.svd(w, full_matrices=False)
        return (u[:, :RANK] * s[:RANK]) @ vt[:RANK]

    plain = _rel(x @ trunc(flat).T, y)
    s = np.abs(x).mean(axis=0) ** 0.5
    asvd = _rel(x @ (trunc(flat * s) / s).T, y)
    # best rank-r W' for ||X (W - W')^T||: with X = Q R, truncate R W^T (R^T R = X^T X)
    r = np.linalg.qr(x, mode="r")
    best = np.linalg.solve(r, trunc(r @ flat.T)).T
    svdllm = _rel(x @ best.T, y)
    int4 = _rel(x @ _int4(flat, 64).T, y)
    got = [_g(k) for k in ("r48_out_plain", "r48_out_asvd", "r48_out_svdllm", "r48_out_int4")]
    assert got == [f"{v:.2f}" for v in (plain, asvd, svdllm, int4)]
    assert plain > asvd > svdllm > int4
    out = printed(NB, "lr48_S = np.linalg.cholesky")
    assert f"SVD-LLM (whitened)   output error {svdllm:.3f}" in out
    assert f"dropped singular values of W S: {svdllm:.3f}" in out  # the whitened error is predicted exactly


def test_factors_quantized_to_int4():
    r80 = int(M * N * 0.8 / (M + N))
    assert r80 == 2548 and _g("r48_r80") == "2,548"
    both = r80 * (M + N) * INT4_G128 / 8 / (2 * M * N)
    assert _g("r48_both_share") == f"{both:.1%}" == "20.6%"
    assert _g("r48_int4_share") == f"{INT4_G128 / 16:.1%}" == "25.8%"
    assert _g("r48_speed_80") == "1.25" and _g("r48_speed_int4") == f"{16 / INT4_G128:.1f}" == "3.9"
    assert f"{2 * M * N / 2**20:.1f} MiB" == "112.0 MiB" and "112.0 MiB" in printed(NB, "lr48_keep = 0.8")


def test_section_cites_links_and_boxes():
    text = section(NB, "weight_quantization-low-rank", end="weight_quantization-quality")
    assert_cited(text, ["yuan2023asvd", "wang2024svdllm", "llama3_8b_config"])
    labels = book_labels()
    for ref in ("weight_quantization-sparsity", "weight_quantization-distillation", "mla_serving-svd-kv",
                "beyond_kv_cache-xkv", "weight_quantization-llm-int8", "weight_quantization-llm-vs-cnn"):
        assert f"{{ref}}`{ref}`" in text and ref in labels, ref
    assert "{admonition} In the interview" in text
    assert text.count(":class: dropdown followup") == 2 and "Drill:" in text


def test_review_fixes_hold():
    """cold47: no 'published methods stop at 10-30%', versioned SVD-LLM update, AWQ/Wanda attribution, one X^T convention."""
    text = section(NB, "weight_quantization-low-rank", end="weight_quantization-quality")
    assert "stop at 10–30%" not in text
    assert "recommends whitening alone only up to a\nratio of 0.3" in text or "ratio of 0.3" in text
    assert "arXiv v1 Abstract" in text and "Abstract (v5); README, step 2" in text
    assert "AWQ's activation-magnitude scaling $s_X^{\\alpha}$" in text and "Wanda's $\\lvert W\\rvert" in text
    assert "(W - W')X\\rVert" not in text and text.count("(W - W')X^\\top\\rVert_F") == 2
    assert "by $r(m+n)/mn$" not in text and "fall by the same" not in text
    assert "compressed attention and MLP projections" in text and "its own rank" in text
    # the break-even fraction the SVD-LLM ratio is applied to is per layer: 0.8 * mn params kept in each factored layer
    r80 = int(M * N * 0.8 / (M + N))
    assert r80 * (M + N) <= 0.8 * M * N < (r80 + 1) * (M + N)
