"""mha_kit.engine_rules against the code and papers it is read from."""
import pytest

import mha_kit as mk


def test_v0_preemption_mode_follows_scheduler_preempt():
    # vllm/core/scheduler.py, Scheduler._preempt: one running sequence -> RECOMPUTE, several -> SWAP
    assert mk.v0_preemption_mode(1) == "recompute"
    assert mk.v0_preemption_mode(2) == "swap"
    assert mk.v0_preemption_mode(4) == "swap"
    assert mk.v0_preemption_mode(1, forced="recompute") == "recompute"
    assert mk.v0_preemption_mode(1, forced="swap") == "swap"


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_v0_preemption_mode_rejects_empty_groups(bad):
    with pytest.raises(ValueError, match="at least one running sequence"):
        mk.v0_preemption_mode(bad)


def test_v0_preemption_mode_rejects_unknown_mode():
    with pytest.raises(ValueError, match="forced must be"):
        mk.v0_preemption_mode(1, forced="offload")


def test_cuda_graph_count_by_hand():
    # sizes [1, 2, 4, 8], 2 layers -> 3 pieces each; full decode graphs for sizes <= max_num_seqs
    assert mk.cuda_graph_count([1, 2, 4, 8], num_layers=2, max_num_seqs=4) == (12, 3)
    # one speculative token: decode batches have 2 tokens a sequence, sizes in [2, 8]
    assert mk.cuda_graph_count([1, 2, 4, 8], num_layers=2, max_num_seqs=4, uniform_decode_query_len=2) == (12, 3)
    # vLLM's default sizes up to 512: 1, 2, 4, then 8..248 by 8 (31), then 256..512 by 16 (17)
    sizes = mk.vllm_capture_sizes(512)
    assert len(sizes) == 3 + 31 + 17
    assert mk.cuda_graph_count(sizes, num_layers=32, max_num_seqs=256) == (51 * 33, 3 + 31 + 1)


@pytest.mark.parametrize("args", [([], 2, 4), ([0, 2], 2, 4), ([1, 2], 0, 4), ([1, 2], 2, 0)])
def test_cuda_graph_count_errors(args):
    with pytest.raises(ValueError, match="capture sizes|must be >= 1"):
        mk.cuda_graph_count(*args)


def test_lm_head_step_share_llama32_1b():
    # Llama 3.2 1B (config.json): d 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192, V 128,256, tied head
    per_layer = (2048 * 2048 * 2 + 2048 * 512 * 2) + 3 * 2048 * 8192 + 2 * 2048
    total = 128_256 * 2048 + 16 * per_layer + 2048
    assert total == 1_235_814_400
    assert mk.lm_head_step_share(128_256, 2048, total) == pytest.approx(128_256 * 2048 / total)
    assert mk.lm_head_step_share(128_256, 2048, total) == pytest.approx(0.2125, abs=1e-4)
    kept = mk.lm_head_step_share(128_256, 2048, total, kept=32_768)
    assert kept == pytest.approx(32_768 * 2048 / (total - 95_488 * 2048))


@pytest.mark.parametrize("kept", [0, 128_257])
def test_lm_head_step_share_rejects_kept(kept):
    with pytest.raises(ValueError, match="kept rows"):
        mk.lm_head_step_share(128_256, 2048, 10**10, kept=kept)


def test_lm_head_step_share_rejects_head_larger_than_model():
    with pytest.raises(ValueError, match="cannot exceed"):
        mk.lm_head_step_share(128_256, 2048, 1000)


def test_v0_forced_recompute_of_a_multi_sequence_group_is_not_supported():
    # vllm/core/scheduler.py, Scheduler._preempt_by_recompute: assert len(seqs) == 1
    with pytest.raises(ValueError, match="len\\(seqs\\) == 1"):
        mk.v0_preemption_mode(4, forced="recompute")
