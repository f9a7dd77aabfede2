"""The numbers of the chapter "CUDA for inference engineers", recomputed by hand (products written out),
never read back from the notebook."""
import pytest

import mha_kit as mk


def test_thread_index_example():
    # block (8, 4, 2), grid (4, 3, 2); thread (3, 2, 1) of block (1, 2, 1)
    tid = 3 + 2 * 8 + 1 * 8 * 4
    bid = 1 + 2 * 4 + 1 * 4 * 3
    assert (tid, bid) == (51, 21)
    assert mk.thread_global_index((3, 2, 1), (1, 2, 1), (8, 4, 2), (4, 3, 2)) == (51, 21, 21 * 64 + 51)
    assert divmod(51, 32) == (1, 19)  # warp 1, lane 19


def test_coalescing_example():
    start = (5 * 4096 * 128 + 100 * 128) * 2  # head 5, token 100, bf16
    assert start % 32 == 0
    assert mk.sectors_touched([start + 2 * i for i in range(32)], 2) == 64 // 32
    assert mk.sectors_touched([start + 2 * 128 * i for i in range(32)], 2) == 32


def test_launch_configuration_numbers():
    h100 = mk.GPUS["h100-sxm"]
    grid = 4096 * 4096 // 256
    assert grid == 65_536
    per_sm = min(65_536 // (256 * 32), 2048 // 256)
    assert per_sm == 8 == mk.blocks_per_sm(h100, 256, 256 * 32, 1024)
    slots = 132 * per_sm
    assert mk.wave_efficiency(grid, slots) == pytest.approx(65_536 / (63 * 1056))
    assert mk.format_percent(mk.wave_efficiency(1200, slots)) == mk.format_percent(1200 / (2 * 1056))
    assert mk.blocks_per_sm(h100, 256, 256 * 64, 1024) == 65_536 // (256 * 64) == 4
    with pytest.raises(ValueError, match="one block must fit"):
        mk.blocks_per_sm(h100, 1024, 1024 * 72, 1024)  # 73,728 > 65,536 registers


def test_divergence_of_the_diagonal_tile():
    # rows 0..30 split the first half-row warp, rows 32..62 the second: 31 + 31 of 2 * 64 warps
    taken = [k <= q for q in range(64) for k in range(64)]
    assert mk.divergent_warps(taken) == (31 + 31, 128)
    tiles = mk.causal_tiles(4096, 64, 64)
    assert (tiles.masked, tiles.computed) == (64, 64 * 65 // 2)
    assert mk.format_percent(62 * 64 / (128 * 2080)) == "1.5%"


def test_bank_conflict_cases():
    assert mk.bank_conflict_degree([32 * r + 5 for r in range(32)]) == 32
    assert mk.bank_conflict_degree([33 * r + 5 for r in range(32)]) == 1
    # bf16 [32][32]: element (r, 5) in word 16 r + 2, banks 2 and 18 only, 16 words each
    assert mk.bank_conflict_degree([16 * r + 2 for r in range(32)]) == 16
    assert mk.bank_conflict_degree([17 * r + 2 for r in range(32)]) == 1  # [32][34]: 17 words a row


def test_reduction_ladder_numbers():
    ladder = mk.reduction_ladder(2**22, 256, 1056)
    blocks = 2**22 // 256
    assert ladder[0].warp_steps == blocks * (8 * 5 + 4 + 2 + 1)  # s = 1..16 all 8 warps, then 4, 2, 1
    assert ladder[0].tree.warp_steps == ladder[1].tree.warp_steps  # divergence against conflicts
    assert ladder[2].warp_steps == blocks * (4 + 2 + 1 + 1 + 1 + 1 + 1 + 1)
    assert ladder[3].warp_steps == blocks // 2 * 12
    assert ladder[0].barriers == blocks * 9 and ladder[-1].barriers == 1056
    assert ladder[3].tree.barriers - ladder[4].tree.barriers == 9 - 4
    assert ladder[-1].loads_per_thread == 16  # 4,194,304 / 270,336 = 15.5, rounded up
    assert ladder[-1].warp_steps == 1056 * (8 * 5 + 3)


def test_fatbin_table():
    wheel = ["sm_80", "sm_90a", "compute_90"]
    assert [mk.fatbin_code_for(wheel, d)[1] for d in ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0")] == \
        ["sm_80", "sm_80", "sm_80", "sm_90a", "compute_90", "compute_90"]


def test_uva_offload_cost():
    pcie = mk.LINKS["pcie5-x16"].bytes_per_s
    assert f"{4 * 2**30 / pcie * 1e3:.0f}" == "67"  # 4 GiB over PCIe Gen5 x16
    weights = 2 * mk.dense_decoder_params(mk.get_model_facts("llama-3-8b"))
    assert round((4 * 2**30 / pcie) / (weights / mk.GPUS["h100-sxm"].hbm_bandwidth)) == 14


def test_conv_tile_window_reads_two_way_conflict():
    """cuda_basics-convolution: a warp of the 16 x 16 block spans two rows of the 18-word-pitch tile."""
    words = [(lane // 16) * 18 + lane % 16 for lane in range(32)]  # tile[ty][tx] for lanes 0..31
    banks = [w % 32 for w in words]
    per_bank = {b: len({w for w in words if w % 32 == b}) for b in set(banks)}
    assert max(per_bank.values()) == 2
    assert sorted(b for b, n in per_bank.items() if n == 2) == [0, 1]  # lanes 30, 31 wrap onto lanes 0, 1
    assert mk.bank_conflict_degree(words) == 2
    assert mk.bank_conflict_degree(list(range(32))) == 1  # a 32-wide block: one tile row per warp


def test_training_step_mfu_example():
    # Llama-3-8B: embeddings in and out, 32 layers of attention (32 query, 8 KV heads of 128) and SwiGLU MLP
    d, vocab, layers, ff, kv = 4096, 128_256, 32, 14_336, 8 * 128
    per_layer = (d * d + 2 * d * kv + d * d) + 3 * d * ff + 2 * d
    params = 2 * vocab * d + layers * per_layer + d
    assert params == 8_030_261_248 == mk.model_params(mk.MODEL_FACTS["llama-3-8b"])
    n_matmul = params - vocab * d  # the input table is a lookup
    seq, seqs = 4096, 4
    per_token = 6 * n_matmul + 6 * layers * seq * (32 * 128)  # 6N + three times Kaplan's forward context term
    step = seqs * seq * per_token
    assert f"{step / 1e12:.0f}" == "791"
    assert f"{step / 989e12:.2f}" == "0.80"
    mfu = step / 2.0 / 989e12
    assert mk.flops_utilisation(step, 2.0, mk.GPUS["h100-sxm"].bf16_flops) == pytest.approx(mfu)
    assert f"{mfu:.0%}" == "40%"
