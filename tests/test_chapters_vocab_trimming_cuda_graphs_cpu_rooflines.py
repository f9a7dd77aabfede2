"""Claims on vocabulary trimming, CUDA graphs, vLLM V0's preemption rule, SGLang's fork and CPU rooflines, recomputed
with the products written out.

Chapters: decoding_sampling (vocabulary trimming), attention_backends (CUDA-graph count and memory),
scheduler_design (vLLM V0 preemption rule), prefix_caching (SGLang fork), serving_reliability
(CPU rooflines).
"""
import pytest

import mha_kit as mk

V = 128_256


def _llama_layer(d, heads, kv_heads, head_dim, d_ff):
    return d * heads * head_dim + 2 * d * kv_heads * head_dim + heads * head_dim * d + 3 * d * d_ff + 2 * d


def test_vocab_trimming_llama32_1b():
    read = V * 2048 + 16 * _llama_layer(2048, 32, 8, 64, 8192) + 2048  # tied head, counted once
    assert read == 1_235_814_400
    assert V * 2048 / read == pytest.approx(0.2125, abs=5e-4)  # "about a fifth"
    fewer = read / (read - (V - 32_768) * 2048)
    assert fewer == pytest.approx(1.19, abs=5e-3)


def test_vocab_trimming_70b_is_noise_and_the_draft_is_not():
    read70 = 80 * _llama_layer(8192, 64, 8, 128, 28672) + 8192 + V * 8192  # input table only gathered
    assert V * 8192 / read70 == pytest.approx(0.015, abs=1e-3)
    layer8 = _llama_layer(4096, 32, 8, 128, 14336)
    draft = layer8 + 2 * 4096 * 4096 + V * 4096  # EAGLE: one layer, the 2d -> d layer, the head
    assert V * 4096 / draft == pytest.approx(0.676, abs=1e-3)
    assert draft / (draft - (V - 32_768) * 4096) == pytest.approx(2.01, abs=5e-3)


def test_cuda_graph_count_and_activations_llama3_8b():
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))
    assert sizes == list(mk.vllm_capture_sizes(512))
    assert len(sizes) * (32 + 1) == 1683  # piecewise: every size, 33 pieces
    assert sum(1 for s in sizes if s <= 256) == 35  # full decode graphs, max_num_seqs 256
    assert 512 * 3 * 14336 * 2 == 44_040_192  # gate-and-up output and its product, bf16: 42 MiB


def test_v0_rule_cases():
    assert [mk.v0_preemption_mode(n) for n in (1, 4)] == ["recompute", "swap"]
    assert mk.v0_preemption_mode(1, "recompute") == "recompute"
    with pytest.raises(ValueError):  # V0's _preempt_by_recompute asserts one running sequence
        mk.v0_preemption_mode(4, "recompute")


def test_sglang_fork_prefill():
    doc, ask, n = 1000, 20, 3
    at_once = n * (doc + ask)
    committed = doc + n * ask
    assert (at_once, committed) == (3060, 1060)
    assert at_once / committed == pytest.approx(2.9, abs=0.05)


def test_sglang_fork_with_the_radix_cache():
    doc = list(range(1000))
    branches = [doc + list(range(10_000 + 20 * k, 10_020 + 20 * k)) for k in range(3)]
    cache = mk.RadixPrefixCache(10_000)
    cache.serve(doc)
    assert [cache.serve(b) for b in branches] == [1000, 1000, 1000]


def test_cpu_roofline_numbers():
    dram = 8 * 8 * 4.8e9
    assert dram == pytest.approx(307.2e9)
    p8 = 32 * _llama_layer(4096, 32, 8, 128, 14336) + 4096 + 2 * V * 4096
    assert dram / (2 * p8) == pytest.approx(19.1, abs=0.1)  # bf16 decode bound, tokens/s
    avx, amx16, amx8 = 56 * 2e9 * 64, 56 * 2e9 * 1024, 56 * 2e9 * 2048
    assert avx / dram * 2 / 2 == pytest.approx(23.3, abs=0.1)  # tokens per read, bf16 weights
    assert amx16 / dram == pytest.approx(373.3, abs=0.1)
    assert amx8 / dram * 1 / 2 == pytest.approx(373.3, abs=0.1)  # int8 weights: 1 byte each
    assert mk.compute_bound_tokens(16, dram, avx) == pytest.approx(avx / dram)
    assert 2 * p8 * 1000 / avx == pytest.approx(2.24, abs=0.01)
    assert 2 * p8 * 1000 / amx16 == pytest.approx(0.14, abs=0.005)
