"""Sections long_context_structure-xattention-trishape and long_context_structure-small-rag-vs-large.

XAttention's block scoring and SCBench's tri-shape, rebuilt here: the antidiagonal sums of a toy head
computed element by element (not through the strided reshape the chapter uses), the same threshold rule
as find_blocks_chunked (mit-han-lab/x-attention, xattn/src/utils.py), and score entries of A-shape and
tri-shape counted in closed form from SCBench's defaults (n_init 128, n_local 3,968, n_last 100;
microsoft/MInference scbench/readme.md). Then Llama 3 8B with 4K retrieved tokens against Llama 3 70B
on H100s in bf16, by the roofline written out by hand from the models' shapes (config.json) and the
H100 SXM datasheet (80 GB, 3.35 TB/s, 989 TFLOPS bf16 dense), with NVLink 4 at 450 GB/s each way.
"""
import numpy as np
import pytest

import chapter_outputs

HBM_BYTES, HBM_BW, PEAK, NVLINK = 80e9, 3.35e12, 989e12, 450e9
V = 128_256
MODELS = {  # layers, d, query heads, KV heads, head size, d_ff
    "8b": (32, 4096, 32, 8, 128, 14_336),
    "70b": (80, 8192, 64, 8, 128, 28_672),
}


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("long_context_structure")


def _params(m):
    L, D, H, H_KV, D_H, D_FF = MODELS[m]
    return 2 * V * D + L * (2 * D * H * D_H + 2 * D * H_KV * D_H + 3 * D * D_FF + 2 * D) + D


def _layer_flops_per_token(m):
    L, D, H, H_KV, D_H, D_FF = MODELS[m]
    return 2 * L * (2 * D * H * D_H + 2 * D * H_KV * D_H + 3 * D * D_FF)


def _floors(m, tp, n):
    """(prefill s, decode step s, fits) for one n-token sequence on tp H100s, batch of one."""
    L, D, H, H_KV, D_H, D_FF = MODELS[m]
    params = _params(m)
    cache = 2 * L * H_KV * D_H * 2 * n / tp
    read_w = (params - V * D) * 2 / tp
    comm = 0.0 if tp == 1 else 2 * L * (2 * (tp - 1) * (D // tp) * 2) / NVLINK  # two ring all-reduces a layer
    comm_prefill = 0.0 if tp == 1 else 2 * L * (2 * (tp - 1) * (n * D // tp) * 2) / NVLINK
    pre_flops = (_layer_flops_per_token(m) * n + 2 * V * D + 2 * L * H * n * n * D_H) / tp
    dec_flops = (_layer_flops_per_token(m) + 2 * V * D + 2 * L * 2 * H * n * D_H) / tp
    prefill = max((read_w + cache) / HBM_BW, pre_flops / PEAK) + comm_prefill
    decode = max((read_w + cache) / HBM_BW, dec_flops / PEAK) + comm
    return prefill, decode, HBM_BYTES - params * 2 / tp > 0


def test_params():
    assert _params("8b") == 8_030_261_248
    assert _params("70b") == 70_553_706_496


def test_small_rag_table(nb):
    out = chapter_outputs.printed(nb, "question, retrieved, answer = 200, 4_096, 200")
    rows = {"Llama 3 8B + 4K retrieved, 1 GPU": ("8b", 1, 4296), "Llama 3 70B, 1 GPU": ("70b", 1, 200),
            "Llama 3 70B, TP=2": ("70b", 2, 200), "Llama 3 70B, TP=4": ("70b", 4, 200)}
    got = {}
    for name, (m, tp, n) in rows.items():
        prefill, decode, fits = _floors(m, tp, n)
        read = (_params(m) - V * MODELS[m][1]) * 2
        gpu_s = tp * (prefill + 200 * decode)
        got[name] = prefill, decode, read, gpu_s
        line = f"{name:<34}{n:>7,}{'yes' if fits else 'no':>6}{read / 1e9:>10.1f} GB"
        if fits:
            line += f"{1e3 * prefill:>11.1f}{1e3 * decode:>8.1f}{gpu_s:>10.2f}"
        assert line in out, line
    assert not _floors("70b", 1, 200)[2]  # 141 GB of bf16 weights on an 80 GB GPU
    small, big = got["Llama 3 8B + 4K retrieved, 1 GPU"], got["Llama 3 70B, TP=4"]
    assert f"weights read per step: {big[2] / small[2]:.1f}x fewer" in out
    assert f"GPU-seconds per request: {big[3] / small[3]:.1f}x fewer" in out
    assert f"{1e3 * (small[0] - big[0]):+.0f} ms" in out
    assert small[0] > big[0] and small[1] < big[1]  # worse first token, cheaper answer tokens
    assert chapter_outputs.glued(nb, "lcs_srl_read_ratio") == f"{big[2] / small[2]:.1f}"


def test_small_rag_flops(nb):
    out = chapter_outputs.printed(nb, "question, retrieved, answer = 200, 4_096, 200")
    flops = {}
    for m, n in (("8b", 4296 + 200), ("70b", 200 + 200)):
        L, D, H = MODELS[m][:3]
        flops[m] = (_layer_flops_per_token(m) * n + 2 * V * D + L * 2 * H * 128 * n * (n + 1)
                    + 2 * V * D * 200)
    assert 1.1 < flops["8b"] / flops["70b"] < 1.4  # FLOPs alone are close; the KV cache decides at full load
    assert (f"compute per request: 8B {flops['8b'] / 1e12:.1f} TFLOP, 70B {flops['70b'] / 1e12:.1f} TFLOP "
            f"({flops['8b'] / flops['70b']:.2f}x)") in out


def test_antidiagonal_toy(nb):
    out = chapter_outputs.printed(nb, "n_toy, d_toy, B, S = 32, 8, 8, 4")
    assert "reshaped product == antidiagonal sums of QK^T: True" in out
    rng = np.random.default_rng(7)
    n, d, B, S = 32, 8, 8, 4
    q, k = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    logits = 0.3 * (q @ k.T)
    logits[:, 13] += 4.0
    for i in range(n):
        logits[i, i] += 4.0
        if i:
            logits[i, i - 1] += 4.0
    p = np.exp(logits[n - B:] - logits[n - B:].max(axis=1, keepdims=True)) * np.tri(n)[n - B:]
    p /= p.sum(axis=1, keepdims=True)
    exact = [p[:, b * B:(b + 1) * B].sum() / B for b in range(4)]
    est = []
    for b in range(4):  # every entry (r, c) of a sub-block with r + c == S - 1, written out
        est.append(sum(p[r0 + r, b * B + c0 + S - 1 - r] for r0 in (0, S) for c0 in (0, S) for r in range(S)))
    est = np.array(est) / sum(est)
    kept, mass = {0, 3}, est[0] + est[3]
    for b in sorted({1, 2}, key=lambda b: -est[b]):
        if mass >= 0.8:
            break
        kept.add(b)
        mass += est[b]
    assert kept == {0, 1, 3}  # the vertical line's block is found, block 2 dropped
    for b in range(4):
        assert f"{b:<10}{exact[b]:>11.3f}{est[b]:>13.3f}{'yes' if b in kept else 'no':>6}" in out
    kept_mass = sum(exact[b] for b in kept)
    assert kept_mass >= 0.8
    assert f"kept 3 of 4 blocks, {kept_mass:.3f} of the exact mass; scoring read 16 of 64 entries" in out


def test_tri_shape_counts(nb):
    out = chapter_outputs.printed(nb, "n_pre, n_init, n_local, n_last, obs")
    n, w, tail = 131_072, 128 + 3_968, 100
    dense = n * (n + 1) // 2
    a_shape = w * (w + 1) // 2 + (n - w) * w  # rows 1..w read all earlier keys, the rest read w
    tri = w * (w + 1) // 2 + (n - tail - w) * w + (n * (n + 1) // 2 - (n - tail) * (n - tail + 1) // 2)
    assert (dense, a_shape, tri) == (8_590_000_128, 528_484_352, 541_177_002)
    assert f"A-shape         {a_shape:>16,} score entries, {a_shape / dense:7.2%} of dense" in out
    assert f"tri-shape       {tri:>16,} score entries, {tri / dense:7.2%} of dense" in out
    assert "sees 4,096 of 131,072 keys (3.12%)" in out


def test_citations_and_links(nb):
    xa = chapter_outputs.section(nb, "long_context_structure-xattention-trishape",
                                 end="long_context_structure-long-documents")
    chapter_outputs.assert_cited(xa, ["xattnrepo", "minferencerepo", "snapkvrepo", "li2025scbench"])
    chapter_outputs.assert_links(xa, ["beyond_kv_cache-minference"])
    sr = chapter_outputs.section(nb, "long_context_structure-small-rag-vs-large",
                                 end="long_context_structure-contract")
    chapter_outputs.assert_cited(sr, ["borgeaud2022retro", "izacard2023atlas"])
    chapter_outputs.assert_links(sr, ["long_context_structure-rag-ft-long"])
    for text in (xa, sr):
        assert "In the interview" in text and ":class: dropdown" in text


def _full_load(m, tp, prompt, answer=200):
    """(KV bytes per request per GPU, batch, step s, bound, prefill GPU-s, decode GPU-s) with HBM filled."""
    L, D, H, H_KV, D_H, D_FF = MODELS[m]
    n = prompt + answer
    kv = 2 * L * H_KV * D_H * 2 * n // tp
    free = HBM_BYTES - -(-_params(m) * 2 // tp)
    b = int(free // kv)
    mem = ((_params(m) - V * D) * 2 / tp + b * kv) / HBM_BW
    comp = b * (_layer_flops_per_token(m) + 2 * V * D + 2 * L * 2 * H * n * D_H) / tp / PEAK
    comm = 2 * L * (2 * (tp - 1) * (b * D // tp) * 2) / NVLINK
    step = max(mem, comp) + comm
    prefill = (_layer_flops_per_token(m) * prompt + 2 * V * D + L * 2 * H * D_H * prompt * (prompt + 1)) / PEAK
    return kv, b, step, "memory" if mem >= comp else "compute", prefill, tp * answer * step / b


def test_small_rag_full_load(nb):
    out = chapter_outputs.printed(nb, "full load: fill each replica's free HBM")
    small, big = _full_load("8b", 1, 4296), _full_load("70b", 4, 200)
    assert small[3] == "memory" and big[3] == "compute"
    assert small[1] < 120 < 1_000 < big[1]  # the retrieved tokens' cache caps the 8B's batch
    for name, tp, r in (("8B", 1, small), ("70B", 4, big)):
        assert (f"{name:<4} TP={tp}: KV {r[0] / 1e9:.3f} GB/request/GPU, batch {r[1]:,}, step {1e3 * r[2]:.1f} ms "
                f"({r[3]}-bound)") in out
        assert f"GPU-ms/request {1e3 * r[4]:.1f} prefill + {1e3 * r[5]:.1f} decode = {1e3 * (r[4] + r[5]):.0f}" in out
    ratio = (small[4] + small[5]) / (big[4] + big[5])
    assert ratio > 1.3  # at full load the 70B is the cheaper one per request
    assert chapter_outputs.glued(nb, "lcs_srl_full_ratio") == f"{ratio:.1f}"
    assert chapter_outputs.glued(nb, "lcs_srl_full_b_small") == f"{small[1]:,}"
    assert chapter_outputs.glued(nb, "lcs_srl_tok_small") == "4,496"
    assert chapter_outputs.glued(nb, "lcs_srl_tok_big") == "400"


def test_slash_parity(nb):
    out = chapter_outputs.printed(nb, "n_toy, d_toy, B, S = 32, 8, 8, 4")
    n, S = 32, 4
    hits = []
    for off in range(6):  # cells (i, i - off) whose in-sub-block coordinates lie on the antidiagonal
        hits.append(sum(1 for i in range(off, n) if (i % S) + ((i - off) % S) == S - 1))
    assert hits[0] == hits[2] == hits[4] == 0 and min(hits[1], hits[3], hits[5]) > 0
    assert f"antidiagonal cells on a slash at offset 0..5: {hits}" in out
    assert chapter_outputs.glued(nb, "lcs_xa_hits_even") == "0"
