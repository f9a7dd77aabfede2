"""Sections beyond_kv_cache-eviction-peak and beyond_kv_cache-rkv.

The peak-memory numbers are recomputed from Llama 3 8B's shape (32 layers, 8 KV heads of 128, bf16)
and OpenVINO's default eviction areas (32 + 512 + 128); the R-KV toy is re-scored here with the
formulas of the reference code (rkv/compression/r1_kv.py, rkv/utils.py), written without mha_kit.
"""
import numpy as np
import pytest

import chapter_outputs

PER_TOKEN = 2 * 32 * 8 * 128 * 2
CAP = 32 + 512 + 128
MIB, GIB = 2**20, 2**30


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("beyond_kv_cache")


def test_peak_numbers(nb):
    assert CAP == 672 and CAP * PER_TOKEN == 84 * MIB
    assert chapter_outputs.glued(nb, "bk_ev_cap") == "672"
    assert chapter_outputs.glued(nb, "bk_ev_cap_bytes") == "84 MiB"
    assert (512 + 16384) * PER_TOKEN == 16896 * 128 * 1024
    assert chapter_outputs.glued(nb, "bk_ev_none_512_16384") == f"{(512 + 16384) * PER_TOKEN / GIB:.1f} GiB"
    assert chapter_outputs.glued(nb, "bk_ev_peak_512_16384") == "84 MiB"
    assert 32768 * PER_TOKEN == 4 * GIB
    assert chapter_outputs.glued(nb, "bk_ev_peak_32768_1024") == "4 GiB"
    assert chapter_outputs.glued(nb, "bk_ev_peak_32768_16384") == "4 GiB"
    assert (32768 + 16384) * PER_TOKEN == 6 * GIB
    assert chapter_outputs.glued(nb, "bk_ev_none_32768_16384") == "6 GiB"
    assert (CAP + 2048) * PER_TOKEN == 340 * MIB
    assert chapter_outputs.glued(nb, "bk_ev_chunked") == "340 MiB"
    layer = 32768 * PER_TOKEN // 32  # one layer's 32K prompt K/V
    assert layer == 128 * MIB and chapter_outputs.glued(nb, "bk_ev_layer_32768") == "128 MiB"
    assert chapter_outputs.glued(nb, "bk_ev_layer_rep_32768") == f"{layer * (32 // 8) // MIB} MiB"
    assert chapter_outputs.glued(nb, "bk_ev_none_32768_1024") == f"{(32768 + 1024) * PER_TOKEN / GIB:.1f} GiB"
    out = chapter_outputs.printed(nb, "ev_start, ev_evictable, ev_recent = 32, 512, 128")
    assert "49,152 -> 672" in out and "16,896 -> 672" in out


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_rkv_toy(nb):
    rng = np.random.default_rng(0)
    s, d, win, budget = 16, 8, 4, 8
    keys = rng.standard_normal((s, d))
    for j in (6, 7, 8, 9):
        keys[j] = keys[3] + 0.05 * rng.standard_normal(d)
    q = rng.standard_normal((win, d)) + 1.5 * keys[3]
    att = _softmax(q @ keys[:-win].T / np.sqrt(d)).mean(0)
    imp = np.array([att[max(i - 1, 0):i + 2].max() for i in range(s - win)])  # max pool, kernel 3
    unit = keys / np.linalg.norm(keys, axis=1, keepdims=True)
    sim = unit @ unit.T
    np.fill_diagonal(sim, 0)
    for i in range(s):
        similar = np.flatnonzero(sim[i] > 0.5)
        sim[i, similar.max() if similar.size else 0] = 0
    red = _softmax(sim.mean(axis=0))[:-win]
    keep = budget - win
    step = {3, 6, 7, 8, 9}
    imp_set = sorted(np.argsort(-imp)[:keep].tolist())
    assert chapter_outputs.glued(nb, "bk_rk_imp_set") == str(imp_set)
    assert chapter_outputs.glued(nb, "bk_rk_imp_copies") == str(len(set(imp_set) & step))
    assert len(set(imp_set) & step) >= 3
    for lam in (0.5, 0.07):
        kept = sorted(np.argsort(-(lam * imp - (1 - lam) * red))[:keep].tolist())
        assert chapter_outputs.glued(nb, f"bk_rk_set_{lam}") == str(kept)
        assert chapter_outputs.glued(nb, f"bk_rk_copies_{lam}") == str(len(set(kept) & step))
    assert chapter_outputs.glued(nb, "bk_rk_copies_0.5") == "1" and "9" in chapter_outputs.glued(nb, "bk_rk_set_0.5")
    assert chapter_outputs.glued(nb, "bk_rk_copies_0.07") == "0"
    assert chapter_outputs.glued(nb, "bk_rk_t_default") == str(128 + 128)  # R1KV budget + divide_length
    assert chapter_outputs.glued(nb, "bk_rk_paper_frac") == "10%"


def test_section_form(nb):
    text = chapter_outputs.section(nb, "beyond_kv_cache-eviction-peak", end="beyond_kv_cache-cross-layer")
    assert text.startswith("(beyond_kv_cache-eviction-peak)=\n### ")
    assert "(beyond_kv_cache-rkv)=\n### " in text
    assert text.count("```{admonition} In the interview\n:class: tip\n**[") == 2
    assert text.count(":class: dropdown") == 2
    for locator in ("openvinoeviction{Conceptual Model}", "openvinoeviction{Overview}",
                    "openvinoeviction{(Optional) Adaptive R-KV score aggregation}", "li2024snapkv{§4}",
                    "rkvrepo{rkv/utils.py, cal_similarity}", "rkvrepo{README.md, How it works;",
                    "{ref}`beyond_kv_cache-minference`", "{ref}`tree_attention-eviction-frees`",
                    "snapkvrepo{snapkv/monkeypatch/llama_hijack_4_37.py, llama_flash_attn2_forward}",
                    "rkvrepo{run_math.py, --divide_method and --divide_length}"):
        assert locator in text, locator
    assert "or use a sparse prefill" not in text and "or a sparse prefill" not in text
    assert "still stores every prompt key" in text and "our estimate" in text
