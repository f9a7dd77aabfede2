"""Section continuous_batching-lmdeploy-prefill of "Continuous batching and chunked prefill".

LMDeploy TurboMind's chunked prefill, redone apart from the chapter's code. The old budget rule is
LlamaBatch::AdjustMaxInputCount at commit ddb462b (PR #2201, lines 427-457): the pending prompt tokens
over max_prefill_iters, the largest of the last max_prefill_iters passes, plus the batch size, raised to
num_tokens_per_iter; replayed here pass by pass with a deque as the C++ keeps it. The current rule is
max_forward_token_num = max_prefill_token_num + max_batch_size (src/turbomind/turbomind.cc), decodes one
token each. Step times come from a roofline built from published constants: Llama 3 8B has 8,030,261,248
parameters, a 128,256 x 4,096 embedding, 32 layers, 32 query heads, 8 KV heads of 128 (Meta's config.json);
the H100 SXM reads 3.35 TB/s and peaks at 989 TFLOPS dense bf16 (NVIDIA's datasheet).
"""
import collections
import math

import pytest
import chapter_outputs

PARAMS, VOCAB, D, LAYERS, KV_HEADS, HEAD_DIM, HEADS = 8_030_261_248, 128_256, 4096, 32, 8, 128, 32
BANDWIDTH, PEAK = 3.35e12, 989e12
W = 2 * PARAMS
K = 2 * 2 * LAYERS * KV_HEADS * HEAD_DIM
FLOPS_TOKEN = 2 * (PARAMS - VOCAB * D)
FLOPS_CACHED = 2 * 2 * HEADS * HEAD_DIM * LAYERS
N_DEC, CTX, DOC = 64, 1_000, 8_000


def step_seconds(new_tokens, cached):
    return max((W + K * (cached + new_tokens)) / BANDWIDTH, (FLOPS_TOKEN * new_tokens + FLOPS_CACHED * cached) / PEAK)


def ms(seconds):
    return f"{1e3 * seconds:,.1f}"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("continuous_batching")


def adjust_replay(prompt, decodes, num_tokens_per_iter, max_prefill_iters, max_context_token_num=8192):
    """AdjustMaxInputCount as the C++ writes it (deque of min_input_count), then the sequences take tokens in order."""
    if num_tokens_per_iter == 0:  # LlamaTritonModel::handleMissingParams
        num_tokens_per_iter = max_context_token_num
    min_input_count, left, chunks = collections.deque([0] * max_prefill_iters), prompt, []
    while left > 0:
        batch_size = decodes + 1
        input_count = decodes * 1 + left - batch_size  # sum(context - cache_len) - batch_size
        input_count = math.ceil(input_count / max_prefill_iters)
        min_input_count.popleft()
        min_input_count.append(input_count)
        for i in range(len(min_input_count)):
            min_input_count[i] = max(min_input_count[i], input_count)
        budget = min(max(min_input_count[0] + batch_size, num_tokens_per_iter), max_context_token_num)
        remaining = budget - decodes  # Transaction::Commit, decodes first
        chunks.append(min(left, remaining))
        left -= chunks[-1]
    return chunks


def test_old_knobs(nb):
    out = chapter_outputs.printed(nb, "def turbomind_v04_chunks")
    assert adjust_replay(DOC, N_DEC, 0, 1) == [8000] == adjust_replay(DOC, N_DEC, 2048, 1)  # the stall of #1740
    assert adjust_replay(DOC, N_DEC, 0, 4) == [8000]  # max_prefill_iters alone does nothing: 0 means the cap
    assert adjust_replay(DOC, N_DEC, 2048, 4) == [2001, 2001, 2001, 1997]  # ceil(7,999/4) + 65 > 2,048: quarters
    big = adjust_replay(DOC, N_DEC, 2048, 1024)
    assert big == [2048 - 64] * 4 + [64] == adjust_replay(DOC, N_DEC, 2048, 8)
    small = adjust_replay(DOC, N_DEC, 256, 1024)
    assert small[0] == 192 and len(small) == 42 and small[-1] == 8000 - 41 * 192
    for n_iter, iters in ((0, 1), (2048, 1), (0, 4), (2048, 4), (2048, 8), (2048, 1024), (256, 1024)):
        cut = adjust_replay(DOC, N_DEC, n_iter, iters)
        shown = ", ".join(f"{c:,}" for c in cut) if len(cut) <= 5 else f"{len(cut)} passes of {cut[0]:,} (last {cut[-1]:,})"
        assert f"{n_iter:>20,}{iters:>19,}  {shown}" in out
        assert chapter_outputs.glued(nb, f"cb_lmd_old_{n_iter}_{iters}") == shown


def test_python_mapping(nb):
    # _update_tm_config: num_tokens_per_iter 0 -> max_prefill_token_num, max_prefill_iters ceil(session_len / it)
    iters = math.ceil(32768 / 8192)
    assert chapter_outputs.glued(nb, "cb_lmd_map_iters") == str(iters) == "4"
    cut = adjust_replay(20000, N_DEC, 8192, iters, max_context_token_num=32768)
    assert cut[0] == 8192 - N_DEC and sum(cut) == 20000
    assert chapter_outputs.glued(nb, "cb_lmd_map_chunks") == ", ".join(f"{c:,}" for c in cut)
    assert adjust_replay(DOC, N_DEC, 8192, math.ceil(8192 / 8192)) == [DOC]  # Llama 3 8B's window: one pass


@pytest.mark.parametrize("budget", (512, 1024, 2048, 4096, 8192))
@pytest.mark.parametrize("max_batch_size", (128, 1024))
def test_budget_sweep(nb, budget, max_batch_size):
    room = budget + max_batch_size - N_DEC  # the forward cap less one token per decode
    chunk = min(room, DOC)
    t = step_seconds(chunk + N_DEC, N_DEC * CTX)
    n_full, rest = divmod(DOC, room)
    ttft = n_full * step_seconds(room + N_DEC, N_DEC * CTX) + (step_seconds(rest + N_DEC, N_DEC * CTX) if rest else 0)
    line = f"{budget:>11,}{max_batch_size:>10,}{chunk:>7,}{ms(t):>9} ms{chunk / t:>11,.0f} t/s{ms(ttft):>10} ms"
    assert line in chapter_outputs.printed(nb, "def turbomind_prefill"), line
    assert chapter_outputs.glued(nb, f"cb_lmd_{budget}_{max_batch_size}_itl") == ms(t)
    assert chapter_outputs.glued(nb, f"cb_lmd_{budget}_{max_batch_size}_rate") == f"{chunk / t:,.0f}"
    assert chapter_outputs.glued(nb, f"cb_lmd_{budget}_{max_batch_size}_ttft") == ms(ttft)


def test_claims(nb):
    decode_only = step_seconds(N_DEC, N_DEC * CTX)
    assert chapter_outputs.glued(nb, "cb_lmd_decode_ms") == ms(decode_only) == "7.3"
    itl = {b: step_seconds(min(b + 128 - N_DEC, DOC) + N_DEC, N_DEC * CTX) for b in (512, 8192)}
    rate = {b: min(b + 128 - N_DEC, DOC) / itl[b] for b in itl}
    assert itl[8192] / itl[512] > 12  # ITL grows with the chunk
    assert rate[8192] / rate[512] < 1.15  # while the prefill rate is almost flat past the knee
    knee = W * PEAK / (FLOPS_TOKEN * BANDWIDTH)
    assert 512 + 128 - N_DEC > knee  # the smallest chunk of the sweep is already past the knee
    assert chapter_outputs.glued(nb, "cb_lmd_knee") == f"{knee:.0f}"
    # the prose's hard-coded chunk sizes
    assert 512 + 1024 - N_DEC == 1472 and 512 + 128 - N_DEC == 576 and 2048 + 128 - N_DEC == 2112
    text = chapter_outputs.section(nb, "continuous_batching-lmdeploy-prefill", "continuous_batching-little-gain")
    for phrase in ("576-token chunk", "1,472-token chunks", "2,112 tokens", "1,024 on an H100", "v0.5.3", "v0.12.0"):
        assert phrase in text, phrase
