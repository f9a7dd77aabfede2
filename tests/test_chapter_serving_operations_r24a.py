"""Section serving_operations-kv-byte-seconds: capacity in tokens and KV byte-seconds, not requests per second.

Recomputed from Llama 3 8B's shape written out (config.json: 32 layers, d 4096, 32 query and 8 KV heads of
128, d_ff 14336, vocabulary 128256; Llama 3.1 8B has the same), the H100 SXM datasheet (80 GB, 3.35 TB/s,
989 TFLOPS dense bf16) and the section's assumptions. The byte-seconds are summed step by step, not by the
closed form the chapter uses, and the FLOPs from a hand count of the matrix products, not through mha_kit.
"""
import math

import pytest
import chapter_outputs

L, D, H, KV, HD, DFF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
HBM, BW, PEAK = 80e9, 3.35e12, 989e12
QPS, TPOT, USE, MFU, PRICE = 200, 0.040, 0.9, 0.5, 2.0
WORK = {"chat": (500, 200), "RAG": (8_000, 200), "agent": (16_000, 1_000)}

KV_TOK = 2 * L * KV * HD * 2  # K and V, every layer, bf16
PROJ = D * H * HD + 2 * D * KV * HD + H * HD * D  # q, k, v, o
PARAMS = 2 * V * D + L * (PROJ + 3 * D * DFF + 2 * D) + D  # embeddings, untied head, norms
FREE = USE * HBM - 2 * PARAMS
LAYER_FLOPS = 2 * L * (PROJ + 3 * D * DFF)  # one token through every layer's matrices


def byte_seconds(prompt, answer):
    return sum(KV_TOK * (prompt + k) * TPOT for k in range(answer))  # one TPOT per step, cache growing


def flops(prompt, answer):
    prefill = prompt * LAYER_FLOPS + 2 * V * D + L * 2 * H * HD * prompt * (prompt + 1)  # causal, last logits
    # each later token: its matrices, its logits, and q.k plus p.v over the cache and itself
    decode = sum(LAYER_FLOPS + 2 * V * D + 4 * L * H * HD * (prompt + k + 1) for k in range(answer - 1))
    return prefill + decode


def fleet(name):
    prompt, answer = WORK[name]
    held = QPS * byte_seconds(prompt, answer)
    need = {"memory": held / FREE, "bandwidth": held / (TPOT * BW - 2 * PARAMS),
            "compute": QPS * flops(prompt, answer) / (MFU * PEAK)}
    return need, math.ceil(max(need.values())), held


NB = chapter_outputs.notebook("serving_operations")


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_per_token_cache_and_free_memory():
    assert KV_TOK == 131_072  # 128 KiB
    assert PARAMS == 8_030_261_248
    assert f"{FREE / 1e9:.1f}" == "55.9"
    assert "128 KiB of cache a token; 55.9 GB" in chapter_outputs.printed(NB, "def kv_byte_seconds(")


@pytest.mark.parametrize("name, gbs, fit", [("chat", "0.63", 609), ("RAG", "8.49", 52), ("agent", "86.50", 25)])
def test_byte_seconds_per_request(name, gbs, fit):
    prompt, answer = WORK[name]
    assert f"{byte_seconds(prompt, answer) / 1e9:.2f}" == gbs == glued(f"so_kvs_bs_{name}")
    assert int(FREE // (KV_TOK * (prompt + answer))) == fit == int(glued(f"so_kvs_fit_{name}"))
    assert glued(f"so_kvs_dec_{name}") == f"{answer * TPOT:.0f}"


def test_the_per_request_table():
    lines = chapter_outputs.printed(NB, "def kv_byte_seconds(").splitlines()
    for name, (prompt, answer) in WORK.items():
        row = next(line for line in lines if line.startswith(name + " "))
        assert row.split() == [name, f"{prompt:,}", f"{answer:,}", f"{prompt + answer:,}", f"{answer * TPOT:.0f}s",
                               f"{KV_TOK * (prompt + answer) / 1e9:.2f}GB", f"{byte_seconds(prompt, answer) / 1e9:.2f}",
                               f"{flops(prompt, answer) / 1e12:.1f}"]


def test_prefill_residence_is_small():
    prompt = WORK["agent"][0]
    pre_s = (prompt * LAYER_FLOPS + 2 * V * D + L * 2 * H * HD * prompt * (prompt + 1)) / PEAK
    share = KV_TOK * prompt / 2 * pre_s / byte_seconds(*WORK["agent"])
    assert share < 0.01
    assert glued("so_kvs_pre_share") == f"{share:.1%}"


@pytest.mark.parametrize("name, gpus, bound", [("chat", 5, "compute"), ("RAG", 54, "compute"), ("agent", 310, "memory")])
def test_gpus_and_the_binding_resource(name, gpus, bound):
    need, got, held = fleet(name)
    assert got == gpus and max(need, key=need.get) == bound
    assert need["bandwidth"] < need["memory"]  # a 40 ms step reads more than an H100 holds
    prompt, answer = WORK[name]
    row = next(line for line in chapter_outputs.printed(NB, "PRICE = 2.0").splitlines() if line.startswith(name + " "))
    per_m = 1e6 * max(need.values()) * PRICE / 3600 / (QPS * (prompt + answer))  # unrounded need, pooled
    assert row.split() == [name, f"{QPS * prompt:,}", f"{QPS * answer:,}", f"{held / 1e12:.2f}TB",
                           f"{need['memory']:.1f}", f"{need['bandwidth']:.1f}", f"{need['compute']:.1f}",
                           str(gpus), bound, f"{per_m:.3f}"]


def per_token_cost(name):
    prompt, answer = WORK[name]
    return max(fleet(name)[0].values()) / (prompt + answer)  # GPUs per token/s, before the ceiling


def test_ratios_at_equal_qps():
    (p, a), (p0, a0) = WORK["agent"], WORK["chat"]
    assert round((p + a) / (p0 + a0)) == 24 == int(glued("so_kvs_r_tok_agent"))
    assert round(byte_seconds(p, a) / byte_seconds(p0, a0)) == 138 == int(glued("so_kvs_r_bs_agent"))
    # GPU and cost ratios on the unrounded need: chat's ceiling (4.08 -> 5) would distort them
    gpu_r = max(fleet("agent")[0].values()) / max(fleet("chat")[0].values())
    assert round(gpu_r) == 76 == int(glued("so_kvs_r_gpu_agent"))
    assert glued("so_kvs_gpus_agent") == "310" and glued("so_kvs_gpus_chat") == "5"
    assert glued("so_kvs_round_chat") == f"{5 - max(fleet('chat')[0].values()):.1f}" == "0.9"
    per_tok = per_token_cost("agent") / per_token_cost("chat")
    assert glued("so_kvs_r_perm_agent") == f"{per_tok:.1f}" == "3.1"
    assert glued("so_kvs_r_bs_RAG") == f"{byte_seconds(*WORK['RAG']) / byte_seconds(p0, a0):.0f}"


def test_rag_costs_more_per_token_than_chat_not_less():
    # both compute-bound; attention FLOPs per token grow with the context, so RAG must cost more per token
    rag = per_token_cost("RAG") / per_token_cost("chat")
    assert rag > 1 and glued("so_kvs_r_perm_RAG") == f"{rag:.1f}" == "1.1"
    gpu_r = max(fleet("RAG")[0].values()) / max(fleet("chat")[0].values())
    assert glued("so_kvs_r_gpu_RAG") == f"{gpu_r:.0f}" == "13"
    printed = chapter_outputs.printed(NB, "PRICE = 2.0")
    assert "$ per token 0.9x" not in printed and "GPUs 13x, $ per token 1.1x" in printed


def test_headroom_for_occupancy():
    mem = fleet("agent")[0]["memory"]
    assert mem / fleet("agent")[1] > 0.99  # the rounded fleet is ~100% mean occupancy
    assert glued("so_kvs_occ") == "0.85" and glued("so_kvs_occ_mem_agent") == f"{mem:.1f}"
    assert glued("so_kvs_occ_gpus_agent") == f"{mem / 0.85:.0f}" == "364"


def test_bandwidth_crossover_step():
    assert glued("so_kvs_hbm_ms") == f"{1e3 * USE * HBM / BW:.1f}" == "21.5"
    assert glued("so_kvs_hbm_gb") == f"{USE * HBM / 1e9:.0f}" == "72"
    assert 1e3 * USE * HBM / BW < 1e3 * TPOT  # so a 40 ms step is not bandwidth-bound


def test_list_prices_undercharge_the_agent():
    paid = {n: (p * 5 + a * 25) / (p + a) for n, (p, a) in WORK.items()}  # Opus 4.5, $ per M tokens
    assert glued("so_kvs_paid_chat") == f"{paid['chat']:.2f}" == "10.71"
    assert glued("so_kvs_paid_agent") == f"{paid['agent']:.2f}" == "6.18"
    paid_r = paid["agent"] / paid["chat"]
    assert glued("so_kvs_paid_r") == f"{paid_r:.2f}" == "0.58"
    cost_r = per_token_cost("agent") / per_token_cost("chat")
    assert glued("so_kvs_under_r") == f"{cost_r / paid_r:.0f}" == "5"


def test_byte_seconds_grow_with_the_product_not_the_sum():
    # doubling the answer of the agent doubles its tokens' decode share but more than doubles its byte-seconds
    assert byte_seconds(16_000, 2_000) > 2 * byte_seconds(16_000, 1_000)
    assert byte_seconds(1_000, 1_000) > 50 * byte_seconds(100, 100)  # 10x each way: ~100x
    # but for long answers the N^2/2 term dominates the "prompt times answer" term (a reasoning model)
    prompt, answer = 500, 8_000
    assert answer * (answer - 1) / 2 > 7 * answer * prompt


def test_other_glued_figures():
    assert glued("so_kvs_step_read") == f"{TPOT * BW / 1e9:.0f}" == "134"
    assert glued("so_kvs_held_agent") == f"{fleet('agent')[2] / 1e12:.1f}"
    prompt = WORK["RAG"][0]
    prefill = prompt * LAYER_FLOPS + 2 * V * D + L * 2 * H * HD * prompt * (prompt + 1)
    assert glued("so_kvs_prefill_share") == f"{prefill / flops(*WORK['RAG']):.0%}"
    assert glued("so_kvs_end_agent") == f"{KV_TOK * 17_000 / 1e9:.1f}"
    assert glued("so_kvs_end_agent_prompt") == f"{KV_TOK * 16_000 / 1e9:.1f}"
    assert glued("so_kvs_qps") == str(QPS)
