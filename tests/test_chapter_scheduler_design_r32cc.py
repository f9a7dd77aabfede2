"""Section scheduler_design-trtllm-two-stage of "Scheduling and cache policy".

TensorRT-LLM's GUARANTEED_NO_EVICT reservation (kvCacheManager.cpp getRemainingBlocksToCompletion:
ceil((prompt + max_new_tokens) / tokens_per_block) blocks) against a KV pool for Llama 3 8B in bf16 on one H100
(80 GB, 90% usable, less 8,030,261,248 parameters of 2 bytes; 32 layers x 8 KV heads x 128 x K and V x 2 bytes per
token), blocks of 32 tokens: the admitted counts recomputed from those constants, the capacities bounded by the
memory floor of a decode step (3.35 TB/s), and the queueing arithmetic (Little's law, growth at arrival minus
service) checked against the stored outputs.
"""
import pytest
import chapter_outputs

HBM, BW, PARAMS = 80e9, 3.35e12, 8_030_261_248
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2
TPB, MAX_SEQ, PROMPT, ANSWER = 32, 8192, 1024, 256
LAM, T, TTFT = 40.0, 300, 265


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("scheduler_design")


def g(nb, key):
    return chapter_outputs.glued(nb, key)


def pool_blocks():
    return int((int(0.9 * HBM) - 2 * PARAMS) // KV_PER_TOKEN) // TPB


def test_pool_and_admitted(nb):
    blocks = pool_blocks()
    assert g(nb, "sd_tr_pool_blocks") == f"{blocks:,}" == "13,337"
    per = {"reserve": -(-MAX_SEQ // TPB), "reserve_sized": -(-(PROMPT + ANSWER) // TPB),
           "current": -(-(PROMPT + ANSWER // 2) // TPB)}
    assert per == {"reserve": 256, "reserve_sized": 40, "current": 36}
    for key, b in per.items():
        assert g(nb, f"sd_tr_{key}_n") == str(blocks // b)


PEAK, V, D, L, H, HD = 989e12, 128_256, 4096, 32, 32, 128  # H100 SXM dense bf16; Llama 3 8B vocabulary and shape


def step(prefill, decode, cached):
    """One roofline step written out: weights and the cache read once, 2 FLOPs per weight per new token (the
    embedding table is looked up, not multiplied) plus 4 h d_h FLOPs per layer per cached token."""
    new = prefill + decode
    nbytes = 2 * PARAMS + KV_PER_TOKEN * (cached + new)
    flops = 2 * (PARAMS - V * D) * new + 4 * H * HD * L * cached
    return max(nbytes / BW, flops / PEAK)


def capacity(n):  # Little's law: n running, each for one prefill and ANSWER decode steps
    return n / (step(PROMPT, 0, 0) + ANSWER * step(0, n, n * (PROMPT + ANSWER // 2)))


@pytest.mark.parametrize("key", ["reserve", "reserve_sized", "current"])
def test_capacity_recomputed(nb, key):
    assert g(nb, f"sd_tr_{key}_rate") == f"{capacity(int(g(nb, f'sd_tr_{key}_n'))):.1f}"


def test_queueing_exact(nb):
    mu = capacity(int(g(nb, "sd_tr_reserve_n")))
    backlog = (LAM - mu) * T
    assert g(nb, "sd_tr_backlog") == f"{backlog:,.0f}"
    assert g(nb, "sd_tr_wait") == f"{backlog / mu:.0f}"
    assert g(nb, "sd_tr_ahead") == f"{TTFT * mu:,.0f}"


def test_capacity_below_memory_floor(nb):
    # each request runs at least ANSWER decode steps, each reading the weights and the batch's cache
    prev = 0.0
    for key in ("reserve", "reserve_sized", "current"):
        n = int(g(nb, f"sd_tr_{key}_n"))
        floor_s = ANSWER * (2 * PARAMS + n * (PROMPT + ANSWER // 2) * KV_PER_TOKEN) / BW
        rate = float(g(nb, f"sd_tr_{key}_rate"))
        assert 0.5 * n / floor_s < rate <= n / floor_s * 1.001
        assert rate > prev
        prev = rate


def test_queueing(nb):
    mu = float(g(nb, "sd_tr_reserve_rate"))
    assert mu < LAM < float(g(nb, "sd_tr_reserve_sized_rate"))  # unstable only under full-window reservations
    backlog = float(g(nb, "sd_tr_backlog").replace(",", ""))
    assert backlog == pytest.approx((LAM - mu) * T, abs=20)
    assert float(g(nb, "sd_tr_wait")) == pytest.approx(backlog / mu, abs=2)
    assert float(g(nb, "sd_tr_ahead").replace(",", "")) == pytest.approx(TTFT * mu, abs=20)


def test_section_cites_sources(nb):
    text = chapter_outputs.section(nb, "scheduler_design-trtllm-two-stage")
    for key in ("trtllmscheduler{", "trtllmtuning{", "trtllm2311", "{ref}`scheduler_design-littles-law`"):
        assert key in text


def test_issue_budgets_fit_two_prompts(nb):
    # max_num_tokens of 2,048, 2,050, 2,064 and 2,176 (issue #2311) all fit the same number of whole 1,024-token prompts
    fits = {m // PROMPT for m in (2048, 2050, 2064, 2176)}
    assert fits == {2}
    assert g(nb, "sd_tr_fit") == "2"


def test_policy_list_is_pinned_and_diagnosis_hedged(nb):
    text = chapter_outputs.section(nb, "scheduler_design-trtllm-two-stage")
    assert "trtllmtypesh{enum CapacitySchedulerPolicy}" in text
    assert "trtllmruntimeflags{" in text
    assert "one plausible cause" in text
    assert "Little's law gives the queue, arrival rate times wait" not in text
