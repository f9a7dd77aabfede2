"""The numbers chapter "Attention backends in 2026" states, recomputed independently."""
import numpy as np
import pytest

import mha_kit as mk


def test_capture_sizes_and_padding_claims():
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))  # vllm/config/compilation.py, written out
    assert mk.vllm_capture_sizes(512) == sizes
    assert len(sizes) == 51
    assert min(x for x in sizes if x >= 257) == 272  # 15 padded rows of 272: 5.5%
    assert round(15 / 272 * 100, 1) == 5.5


def test_split_buffer_for_llama3_8b():
    splits, heads, tokens, head_dim, fp32 = 16, 32, 512, 128, 4
    assert splits * heads * tokens * head_dim * fp32 == 128 * 2**20  # "128 MiB"
    cfg = mk.PRESETS["llama-3-8b"]
    assert (cfg.num_heads, cfg.head_dim) == (heads, head_dim)


def test_fa4_growth_and_exp2_accuracy():
    assert 2.25 / 1.0 == 2.25
    x = np.linspace(-40.0, 0.0, 400_001)
    err = np.abs(mk.exp2_poly(x).astype(np.float64) / 2.0**x - 1).max()
    assert 5e-5 < err < 1e-4  # "9e-05"
    assert 2.0**-8 / err == pytest.approx(44, abs=1)


def test_lazy_rescale_claim():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(32, 1024)) * 2.0  # the chapter's sample
    values = rng.normal(size=(1024, 64))
    _, eager = mk.lazy_rescale_attention(scores, values, 0.0, 128)
    lazy_out, lazy = mk.lazy_rescale_attention(scores, values, 8.0, 128)
    assert lazy == 0 < eager
    np.testing.assert_allclose(lazy_out, mk.softmax(scores) @ values, rtol=0, atol=1e-12)


def test_document_mask_tiles():
    lengths = [300, 120, 500, 104]
    doc = np.repeat(np.arange(4), lengths)
    allowed = (doc[:, None] == doc[None, :]) & np.tri(1024, dtype=bool)  # document-causal mask, written out
    tiles = allowed.reshape(8, 128, 8, 128).any(axis=(1, 3))
    assert int(tiles.sum()) == 22
    assert int(np.tri(8, dtype=bool).sum()) == 36


def test_sage_smoothing_claim():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(64, 128))  # the chapter's sample
    k = rng.normal(size=(128, 128))
    k[:, 5] += 20.0
    exact = q @ k.T
    plain = np.abs(mk.int8_scores(q, k, 64, 64, smooth_k=False) - exact).mean()
    smooth = np.abs(mk.int8_scores(q, k, 64, 64, smooth_k=True) - exact).mean()
    assert round(plain / smooth) == 4


def test_split_cap_occupancy_claim():
    h100 = mk.GPUS["h100-sxm"]
    slots, items = 2 * 132, 8  # two thread blocks per SM on 132 SMs; batch 1 x 8 KV heads
    assert h100.num_sms == 132
    free = mk.split_kv_heuristic(items, slots, 8192 // 128)
    assert free == 32
    assert items * 32 / (slots * -(-items * 32 // slots)) == pytest.approx(0.970, abs=5e-4)
    assert items * 16 / slots == pytest.approx(0.485, abs=5e-4)


def test_low_precision_cache_bytes_for_llama3_70b():
    cfg = mk.PRESETS["llama-3-70b"]
    layers, kv_heads, head_dim = 80, 8, 128  # Llama 3 70B config.json
    assert (cfg.num_layers, cfg.num_kv_heads, cfg.head_dim) == (layers, kv_heads, head_dim)
    numbers = layers * 2 * kv_heads * head_dim  # K and V, every layer
    assert mk.kv_cache_bytes_per_token(cfg) == 2 * numbers == 327_680
    nvfp4 = numbers // 2 + numbers // 16  # 4 bits each, one 1-byte E4M3 scale per 16 (NVIDIA's NVFP4)
    assert nvfp4 == 92_160
    assert round(327_680 / nvfp4, 2) == 3.56
    assert mk.format_percent(nvfp4 / 327_680) == "28.1%"


def test_mla_kernel_head_widths():
    v3 = mk.PRESETS["deepseek-v3"]
    assert v3.kv_lora_rank + v3.qk_rope_head_dim == 576  # absorbed key: latent 512 + rotary 64
    assert v3.kv_lora_rank == 512  # absorbed value: the latent itself
    assert v3.qk_nope_head_dim + v3.qk_rope_head_dim == 192 and v3.v_head_dim == 128  # naive prefill form


def test_same_peak_pairs_decode_at_the_bandwidth_ratio():
    # Llama 3 8B, batch 1, bf16: the same bytes a step on both parts of each pair, so the step times
    # stand in the ratio of the HBM bandwidths (datasheets: 1.555 / 2.039 TB/s, 3.35 / 4.8 TB/s).
    llama8 = mk.MODEL_FACTS["llama-3-8b"]
    for slow, fast, ratio in (("a100-40gb", "a100-80gb", 2.039 / 1.555), ("h100-sxm", "h200-sxm", 4.8 / 3.35)):
        assert mk.GPUS[slow].bf16_flops == mk.GPUS[fast].bf16_flops
        t_slow = mk.decode_memory_floor(llama8, slow, 1, 2048, 1)[0]
        t_fast = mk.decode_memory_floor(llama8, fast, 1, 2048, 1)[0]
        assert t_slow / t_fast == pytest.approx(ratio, rel=1e-9)
    assert f"{4.8 / 3.35:.2f}" == "1.43"


def test_sliding_window_tile_counts_at_32k():
    """attention_backends-flexattention: w = 4096 keys, tiles of 128, n = 32,768."""
    rows, per_row = 32_768 // 128, 4_096 // 128  # 256 query tiles; 32 tiles of window, plus the diagonal
    ramp = sum(range(per_row + 1))  # rows 0..32 keep i + 1 tiles: 0 + 1 + ... + 32, plus one each below
    window = rows + ramp + per_row * (rows - 1 - per_row)
    assert window == 256 + 528 + 32 * 223 == 7_920
    assert rows * (rows + 1) // 2 == 32_896 and rows**2 == 65_536
    assert round(100 * window / 32_896) == 24
    assert 32_768 * 32_768 == 2**30  # a boolean n x n mask: 1 GiB

    def sliding(head, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < 128)

    kinds = mk.block_mask_from_mask_mod(sliding, 1, 1024, 1024, 64)
    small_rows, small_per_row = 16, 2
    assert np.count_nonzero(kinds) == sum(min(i, small_per_row) + 1 for i in range(small_rows)) == 45
