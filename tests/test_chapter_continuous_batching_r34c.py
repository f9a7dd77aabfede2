"""Sections continuous_batching-trtllm-model-types and continuous_batching-tgi-knobs of "Continuous batching".

The V1 padding count is redone by hand from the chapter's seeded workload. TGI's batching_task (backends/v3/src/
backend.rs at v3.3.7, no prefill chunking) is replayed here with an event loop written apart from the chapter's, on
a roofline step built from published constants: Llama 3 8B has 8,030,261,248 parameters, a 128,256 x 4,096
embedding, 32 layers, 8 KV heads of 128 (Meta's model card and config.json); the H100 SXM reads 3.35 TB/s and peaks
at 989 TFLOPS dense bf16 (NVIDIA's H100 datasheet). The replay is compared with the chapter's stored table.
"""
import math

import numpy as np
import pytest
import chapter_outputs

PARAMS, VOCAB, D, LAYERS, KV_HEADS, HEAD_DIM, HEADS = 8_030_261_248, 128_256, 4096, 32, 8, 128, 32
BANDWIDTH, PEAK = 3.35e12, 989e12
W = 2 * PARAMS  # bf16 weight bytes, read once per step
K = 2 * 2 * LAYERS * KV_HEADS * HEAD_DIM  # bf16 K and V bytes per cached token
FLOPS_TOKEN = 2 * (PARAMS - VOCAB * D)  # the embedding is a lookup
FLOPS_CACHED = 2 * 2 * HEADS * HEAD_DIM * LAYERS  # q.k and p.v for one query against one cached token


def step_seconds(new_tokens, cached):
    return max((W + K * (cached + new_tokens)) / BANDWIDTH, (FLOPS_TOKEN * new_tokens + FLOPS_CACHED * cached) / PEAK)


def ms(seconds):
    return f"{1e3 * seconds:,.1f}"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("continuous_batching")


def chapter_workload():
    rng = np.random.default_rng(1)
    arrivals = np.cumsum(rng.exponential(1 / 8, size=24))
    prompts = np.clip(rng.lognormal(np.log(500), 0.6, size=24), 32, 4000).astype(int)
    outputs = np.clip(rng.lognormal(np.log(150), 0.5, size=24), 16, 1000).astype(int)
    rows = [(round(float(a), 3), int(p), int(o)) for a, p, o in zip(arrivals, prompts, outputs)]
    return sorted(rows + [(1.0, 6000, 64)])


def test_v1_padding(nb):
    batch = chapter_workload()[:8]
    width = max(p for _, p, _ in batch) + max(o for _, _, o in batch)
    slots, real = 8 * width, sum(p + o for _, p, o in batch)
    out = chapter_outputs.printed(nb, "V1 pads a static batch")
    assert f"V1 token slots {slots:,}; packed tokens {real:,}; {round(100 * real / slots)}% of" in out
    assert chapter_outputs.glued(nb, "cb_v1_useful") == f"{round(100 * real / slots)}%"
    assert slots > 4 * real  # the 6,000-token document sets every row's width


def replay(reqs, ratio, max_waiting, prefill_budget=4096, total_budget=131_072):
    """The router loop as TGI writes it: outer next_batch with no minimum, inner loop with min_size per decode."""
    arrived = lambda t: [i for i, r in enumerate(reqs) if r[0] <= t]  # noqa: E731
    t, admitted, live, gen, first, last, prefills = 0.0, set(), [], {}, {}, {}, 0
    waiting_tokens = 1
    while len(last) < len(reqs):
        queue = [i for i in arrived(t) if i not in admitted]
        if not live and not queue:
            t = min(r[0] for i, r in enumerate(reqs) if i not in admitted)
            continue
        floor = None if (not live or waiting_tokens >= max_waiting) else math.floor(len(live) * ratio)
        pick, ptoks, held = [], 0, sum(reqs[i][1] + reqs[i][2] for i in live)
        for i in queue:
            ptoks += reqs[i][1]
            held += reqs[i][1] + reqs[i][2]
            if ptoks > prefill_budget or held > total_budget:
                break
            pick.append(i)
        if pick and (floor is None or len(pick) >= floor):
            t += step_seconds(sum(reqs[i][1] for i in pick), 0)
            prefills += 1
            waiting_tokens = 1
            admitted.update(pick)
            for i in pick:
                first[i], gen[i] = t, 1
                if reqs[i][2] == 1:
                    last[i] = t
            live = [i for i in live + pick if gen[i] < reqs[i][2]]
        if live:
            t += step_seconds(len(live), sum(reqs[i][1] + gen[i] for i in live))
            waiting_tokens += 1
            for i in live:
                gen[i] += 1
                if gen[i] == reqs[i][2]:
                    last[i] = t
            live = [i for i in live if gen[i] < reqs[i][2]]
    return first, last, prefills


def chat_workload():
    rng = np.random.default_rng(3)
    arrive = np.cumsum(rng.exponential(1 / 30, size=200))
    ask = np.clip(rng.lognormal(np.log(200), 0.6, size=200), 16, 2000).astype(int)
    answer = np.clip(rng.lognormal(np.log(150), 0.5, size=200), 8, 800).astype(int)
    return [(round(float(a), 3), int(p), int(o)) for a, p, o in zip(arrive, ask, answer)]


SETTINGS = (("admit every step", 0.0, 1), ("default since v2.0.2", 0.3, 20),
            ("default before v2.0.2", 1.2, 20), ("hold new requests", 1.2, 100))


def test_tgi_table(nb):
    reqs = chat_workload()
    out = chapter_outputs.printed(nb, "settings = {")
    assert f"one prefill of 4,096 tokens pauses every stream for {ms(step_seconds(4096, 0))} ms" in out
    assert chapter_outputs.glued(nb, "cb_tgi_prefill4096") == ms(step_seconds(4096, 0)) == "62.2"
    rows = {}
    for label, ratio, max_waiting in SETTINGS:
        first, last, prefills = replay(reqs, ratio, max_waiting)
        ttft = np.mean([first[i] - reqs[i][0] for i in first])
        tpot = np.mean([(last[i] - first[i]) / (o - 1) for i, (_, _, o) in enumerate(reqs)])
        rate = sum(o for _, _, o in reqs) / (max(last.values()) - reqs[0][0])
        line = f"{label:<21}{ratio:>6}{max_waiting:>5}{prefills:>9}{ms(ttft):>8} ms{ms(tpot):>8} ms{rate:>9,.0f}"
        assert line in out, line
        rows[label] = (prefills, ttft, tpot, rate)
    eager, now, hold = rows["admit every step"], rows["default since v2.0.2"], rows["hold new requests"]
    assert eager[0] > now[0] > hold[0]  # fewer, larger prefills as admission waits longer
    assert eager[1] < now[1] < hold[1] and eager[2] > now[2] > hold[2]  # TTFT against TPOT
    assert hold[3] < now[3]  # holding requests drains the batch
    assert chapter_outputs.glued(nb, "cb_tgi_eager_prefills") == str(eager[0])
    assert chapter_outputs.glued(nb, "cb_tgi_now_ttft") == ms(now[1])
    assert chapter_outputs.glued(nb, "cb_tgi_hold_rate") == f"{hold[3]:,.0f}"


def test_drills(nb):
    """The two drills' answers, recomputed from the drills' own numbers and found in the chapter's text."""
    assert math.floor(10 * 0.3) == 3 and math.floor(6 * 0.3) == 1 and math.floor(7 * 0.3) == 2
    assert 3 * (900 + 400) == 3900 and (150 + 950 + 700) == 1800 and round(100 * 1800 / 3900) == 46
    tgi = " ".join(chapter_outputs.section(nb, "continuous_batching-tgi-knobs").split())
    assert "running, `waiting_served_ratio` 0.3, `max_waiting_tokens` 20" in tgi
    assert f"min_size = floor(10 × 0.3) = {math.floor(10 * 0.3)}`" in tgi
    trt = " ".join(chapter_outputs.section(nb, "continuous_batching-trtllm-model-types",
                                           end="continuous_batching-tgi-knobs").split())
    prompts, answers = (100, 900, 300), (50, 50, 400)
    assert "prompts 100, 900 and 300 tokens, answers 50, 50 and 400" in trt
    slots = len(prompts) * (max(prompts) + max(answers))
    real = sum(p + a for p, a in zip(prompts, answers))
    assert f"{max(prompts)} + {max(answers)} = {max(prompts) + max(answers):,} slots a row" in trt
    assert f"{len(prompts)} × {max(prompts) + max(answers):,} = {slots:,} slots" in trt
    assert f"{real:,}, about {round(100 * real / slots)}% of the slots" in trt


def test_sections_cite_sources(nb):
    trt = chapter_outputs.section(nb, "continuous_batching-trtllm-model-types", end="continuous_batching-tgi-knobs")
    for key in ("trtllm478{", "trtllmgptmodelconfig{supportsInflightBatching}", "trtllmgptruntime06{",
                "trtllmbatchmanagerdoc{", "trtllmifbsource{", "trtllmexecutorimpl{", "trtllm2006{"):
        assert key in trt
    assert "mUseGptAttentionPlugin && mInputPacked && mPagedKvCache" in trt
    tgi = chapter_outputs.section(nb, "continuous_batching-tgi-knobs")
    for key in ("tgilauncher{", "tgirouterv3{", "tgiwarmup{", "tgi2160{", "tgipr872{", "tgipr1820{"):
        assert key in tgi


def test_tgi_launcher_default_and_memory(nb):
    """TGI v3.3.7 launcher default for max_batch_prefill_tokens, the warm-up hold-back and KV bytes per token, by hand."""
    ffn, positions = 14_336, 8192
    per_layer = 2 * D * HEAD_DIM * (HEADS + KV_HEADS + KV_HEADS + HEADS + HEADS) + 3 * 2 * D * ffn
    flop = LAYERS * per_layer
    a100, h100 = 312 * 10**12 // flop, 900 * 10**12 // flop
    assert chapter_outputs.glued(nb, "cb_tgi_optimal_a100") == f"{a100:,}" == "20,755"
    assert chapter_outputs.glued(nb, "cb_tgi_optimal_h100") == f"{h100:,}"
    assert chapter_outputs.glued(nb, "cb_tgi_default_prefill") == f"{min(a100, h100, positions):,}" == "8,192"
    assert chapter_outputs.glued(nb, "cb_tgi_kv_token_kib") == str(K // 1024) == "128"
    assert chapter_outputs.glued(nb, "cb_tgi_holdback_gb") == "8"  # (1 - 0.90 x 1.0) x 80 GB
    assert K / 2**20 < 0.25  # the issue author's 0.25 MB a token is twice too high
