"""Ulysses' all-to-all bytes, the pipeline bubble, prefill after a cached prefix, the xPyD split,
EPLB's replication and packing, and Switch's capacity drops, against their primary sources.

Sources: Jacobs et al., DeepSpeed-Ulysses, arXiv:2309.14509 sec. 3 (four all-to-alls: Q, K, V
before attention, the output after); Huang et al., GPipe, arXiv:1811.06965 sec. 2.2 (bubble
``(K - 1) / (M + K - 1)``); deepseek-ai/EPLB ``eplb.py`` (``replicate_experts``,
``balanced_packing``); Fedus et al., Switch Transformer, arXiv:2101.03961 sec. 2.2 (capacity =
tokens per batch / experts x capacity factor); Zhong et al., DistServe, arXiv:2401.09670 sec. 4.1.
Expected values are hand-worked products, never read back from the code under test.
"""
import numpy as np
import pytest

import mha_kit as mk

LLAMA_70B = mk.MODEL_FACTS["llama-3-70b"]  # h = 64, h_kv = 8, d_h = 128, 80 layers, d_ff 28672


def test_ulysses_bytes_hand_worked():
    # s = 131072, sp = 8: a rank holds 16384 tokens and sends 7 of 8 head shares of Q, K, V, O:
    # 7 * 16384 * (2*64 + 2*8) * 128 / 8 numbers, 2 bytes each
    assert mk.ulysses_all_to_all_bytes(LLAMA_70B.config, 131072, 8) == 7 * 16384 * 144 * 128 // 8 * 2
    # one rank: nothing to send
    assert mk.ulysses_all_to_all_bytes(LLAMA_70B.config, 1024, 1) == 0


def test_ulysses_falls_with_degree_where_the_ring_does_not():
    cfg = LLAMA_70B.config
    assert mk.ulysses_all_to_all_bytes(cfg, 65536, 8) < mk.ulysses_all_to_all_bytes(cfg, 65536, 2)
    # MHA shape (h_kv = h = 64): Ulysses sends (2h+2h)/(sp * 2h) = 2/sp of the ring's bytes
    mha = mk.AttentionConfig(d_model=8192, num_heads=64, num_kv_heads=64, head_dim=128, num_layers=80)
    assert mk.ulysses_all_to_all_bytes(mha, 65536, 8) * 4 == mk.ring_attention_bytes(mha, 65536, 8)


def test_ulysses_degree_capped_by_kv_heads():
    with pytest.raises(ValueError, match="must divide num_heads"):
        mk.ulysses_all_to_all_bytes(LLAMA_70B.config, 131072, 16)  # 8 KV heads
    with pytest.raises(ValueError, match="divisible by sp"):
        mk.ulysses_all_to_all_bytes(LLAMA_70B.config, 1001, 8)
    with pytest.raises(ValueError, match="AttentionConfig"):
        mk.ulysses_all_to_all_bytes(mk.PRESETS["deepseek-v3"], 1024, 8)


@pytest.mark.parametrize("p, m, expected", [(1, 1, 0.0), (4, 1, 3 / 4), (4, 4, 3 / 7), (4, 16, 3 / 19), (8, 32, 7 / 39)])
def test_pipeline_bubble_gpipe(p, m, expected):
    assert mk.pipeline_bubble_fraction(p, m) == pytest.approx(expected, rel=1e-15)


def test_pipeline_bubble_errors():
    with pytest.raises(ValueError, match="stages"):
        mk.pipeline_bubble_fraction(0, 4)
    with pytest.raises(ValueError, match="micro_batches"):
        mk.pipeline_bubble_fraction(4, 0)


def test_prefix_prefill_flops():
    facts, cfg = LLAMA_70B, LLAMA_70B.config
    assert mk.prefix_prefill_flops(facts, 0, 4096) == mk.prefill_flops(facts, 4096)
    # chunked prefill: two chunks of 2048 add up to the whole 4096 prompt (one extra logits row)
    logits = 2 * facts.vocab_size * cfg.d_model
    chunks = mk.prefix_prefill_flops(facts, 0, 2048) + mk.prefix_prefill_flops(facts, 2048, 2048)
    assert chunks - logits == mk.prefill_flops(facts, 4096)
    # one new token after 1000 cached: its weights, the logits, and 1001 keys at 4 h d_h a layer
    weights = 2 * cfg.num_layers * (mk.projection_params(cfg) + 3 * cfg.d_model * facts.intermediate_size)
    assert mk.prefix_prefill_flops(facts, 1000, 1) == weights + logits + 80 * 4 * 64 * 128 * 1001
    with pytest.raises(ValueError, match="cached_tokens"):
        mk.prefix_prefill_flops(facts, -1, 10)


def test_pd_instances():
    # 4 requests/s of 2000 in, 500 out; 40,000 prefill tokens/s and 2,500 decode tokens/s an instance
    assert mk.pd_instances(4, 2000, 500, 40_000, 2_500) == pytest.approx((0.2, 0.8))
    with pytest.raises(ValueError, match="rate must be a positive number"):
        mk.pd_instances(0, 2000, 500, 40_000, 2_500)
    with pytest.raises(ValueError, match="decode_tokens_per_s"):
        mk.pd_instances(1, 2000, 500, 40_000, float("inf"))


def test_eplb_replicate_hand_worked():
    # loads 10, 4, 3, 1 and 2 spare slots: 10 -> 2 replicas (5 each), then 5 > 4: 3 replicas
    assert mk.eplb_replicate([10, 4, 3, 1], 6).tolist() == [3, 1, 1, 1]
    assert mk.eplb_replicate([10, 4, 3, 1], 4).tolist() == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="at least the number of experts"):
        mk.eplb_replicate([10, 4, 3, 1], 3)
    with pytest.raises(ValueError, match="non-negative"):
        mk.eplb_replicate([10, -4], 3)


def test_eplb_pack_hand_worked():
    # 8, 7, 6, 5, 4, 1 into 2 packs of 3: 8->A, 7->B, 6->B(7<8), 5->A(8<13), 4->A? A=13, B=13: first, A
    # A full (8, 5, 4); 1 -> B
    assert mk.eplb_pack([8, 7, 6, 5, 4, 1], 2).tolist() == [0, 1, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="divisible by num_packs"):
        mk.eplb_pack([1, 2, 3], 2)


def test_eplb_gpu_loads_balances():
    load = [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86]  # EPLB README's first layer
    plain = np.add.reduceat(np.asarray(load, float), np.arange(0, 12, 3))  # 3 experts a GPU, 4 GPUs
    balanced = mk.eplb_gpu_loads(load, 16, 4)
    assert balanced.sum() == pytest.approx(sum(load))
    assert balanced.max() < plain.max()
    assert plain.max() / plain.mean() > 1.25 and balanced.max() / balanced.mean() < 1.1


def test_capacity_drops():
    # 4 tokens, top-1, 2 experts: expert 0 chosen 3 times, capacity 1.0 * 4 / 2 = 2 -> one dropped
    choices = np.array([[0], [0], [0], [1]])
    assert mk.capacity_dropped_fraction(choices, 2, 1.0) == 0.25
    assert mk.capacity_dropped_fraction(choices, 2, 1.5) == 0.0  # capacity 3
    with pytest.raises(ValueError, match="capacity_factor"):
        mk.capacity_dropped_fraction(choices, 2, 0)
    with pytest.raises(ValueError, match="expert indices"):
        mk.capacity_dropped_fraction(choices, 1, 1.0)
