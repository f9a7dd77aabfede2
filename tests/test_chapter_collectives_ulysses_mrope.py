"""Numbers of the collectives, Ulysses, M-RoPE and MLA sections, recomputed by hand (products written out), not read from the notebooks."""
import numpy as np

import mha_kit as mk


def test_deepseek_v3_parameters_by_hand():
    # DeepSeek-V3 config_671B / arXiv:2412.19437 sec. 4.2: d 7168, 61 layers (3 dense, d_ff 18432),
    # 256 routed experts of 2048 + 1 shared in 58 MoE layers, 8 active; MLA q rank 1536, kv rank 512,
    # rope 64, 128 heads of 128 nope + 64 rope, v 128; vocabulary 129280
    expert = 3 * 7168 * 2048
    assert expert == 44_040_192
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert mla == 187_105_280 == mk.projection_params(mk.MODEL_FACTS["deepseek-v3"].config)
    total = 2 * 129280 * 7168 + 61 * mla + 3 * 3 * 7168 * 18432 + 256 * 58 * expert + 58 * expert + 58 * 256 * 7168
    assert round(total / 1e9) == 671
    active = total - (256 - 8) * 58 * expert
    assert 37.0e9 < active < 38.0e9
    assert round(256 * 58 * expert / 1e9) == 654  # the routed experts, about 97% of the total
    assert 0.97 < 256 * 58 * expert / total < 0.98


def test_llama3_8b_layer_linear_maps():
    d, kv, ff = 4096, 8 * 128, 14336
    per_layer = d * d + 2 * d * kv + d * d + 3 * d * ff  # q, k, v, o, gate, up, down
    assert per_layer == 218_103_808
    embeddings = 2 * 128256 * d  # untied input table and output head
    assert round((32 * (per_layer + 2 * d) + embeddings + d) / 1e9, 2) == 8.03


def test_zero3_gpus_for_llama3_70b():
    psi = mk.dense_decoder_params(mk.get_model_facts("llama-3-70b"))
    assert round(16 * psi / 80e9) == 14  # ZeRO-3's 16 bytes a parameter over 80 GB GPUs


def test_ring_all_reduce_jump_at_the_node_boundary():
    grads = 2 * mk.dense_decoder_params(mk.get_model_facts("llama-3-8b"))
    inside = 2 * 7 / 8 * grads / 450e9  # NVLink 4, 450 GB/s each way
    # DGX H100: NCCL's rings across nodes share the node's 8 NICs of 400 Gb/s (Scaling Book Part 12,
    # "Cross-node collectives": B / 400e9 on an H100 SuperPod), not one NIC per GPU
    across = 2 * 15 / 16 * grads / (8 * 50e9)
    assert 1.1 < across / inside < 1.3
    single_nic = 2 * 15 / 16 * grads / 50e9  # a node with one 400 Gb/s NIC: the jump the book used to print
    assert 9 < single_nic / inside < 11


def test_ulysses_traffic_against_projections():
    # Llama 3 70B at 128K tokens, P = 8: bytes one rank sends in the four all-to-alls (bf16), and the
    # Q/K/V/O projection FLOPs of its n / P tokens
    n, p, d, h, hkv, dh = 131072, 8, 8192, 64, 8, 128
    sent = (p - 1) * (n // p) * (2 * h + 2 * hkv) * dh // p * 2
    assert sent == mk.ulysses_all_to_all_bytes(mk.MODEL_FACTS["llama-3-70b"].config, n, p)
    nvlink_s, ib_s = sent / 450e9, sent / 50e9
    proj_s = 2 * (n // p) * d * (2 * h * dh + 2 * hkv * dh) / 989e12
    assert nvlink_s < proj_s < ib_s  # hidden behind the projections on NVLink, not across nodes


def test_mrope_image_advances_by_max_side():
    ids, nxt = mk.mrope_position_ids([("text", 3), ("image", (1, 2, 3)), ("text", 2)])
    assert nxt - 2 == 3 + max(2, 3)  # the image moved the position by max(h, w) = 3, not h * w = 6
    assert ids.shape == (3, 3 + 6 + 2)


def test_svd_absorption_is_exact():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 16))
    x, q = rng.standard_normal((5, 32)), rng.standard_normal((3, 16))
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    r = 6
    cache = x @ (u[:, :r] * s[:r])
    assert np.allclose(q @ (cache @ vt[:r]).T, (q @ vt[:r].T) @ cache.T)
    assert np.allclose(q @ (x @ w).T, (q @ vt.T) @ (x @ (u * s)).T)  # full rank: exact scores
