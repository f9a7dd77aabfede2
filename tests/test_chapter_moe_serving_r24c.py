"""Section moe_serving-imbalance-metrics of "Mixture-of-experts serving": the imbalance metrics a fleet exports.

The routing is regenerated with mha_kit.route_tokens and the chapter's seed and call order (it is the input, not
the result). Everything else is recomputed here without mha_kit: per-expert and per-rank counts, max/mean, the
coefficient of variation, the share over a Switch capacity int(1.25 * n * k / E), the normalised entropy, vLLM's
balancedness (per-layer mean over ranks summed over layers / per-layer max summed, eplb_state.py EplbState.step),
what vLLM's code at commit 50feac95 computes instead (means and maxima over layers, per rank; the bug of
vllm-project/vllm PR 51784), the MoE-layer time model (DeepSeek-V3's d = 7168 and expert 3 x 7168 x 2048; FP8 dispatch copy d + d/128 * 4
bytes, bf16 combine copy 2d; one 50 GB/s port; H100 3.35 TB/s and FP8 at 2 x 989 TFLOPS, the datasheet's 3,958
against 1,979 sparse), the payback of a re-plan at the milder a = 0.3 ratio, the thresholds, and
EPLB's replicate_experts and balanced_packing written out again from deepseek-ai/EPLB's description.
"""
import math

import numpy as np

import chapter_outputs
import mha_kit as mk

NB = chapter_outputs.notebook("moe_serving")
E, K, EP, SPARE, TOK, LAYERS = 256, 8, 32, 32, 4096, 58
SKEWS = (0.0, 0.3, 0.6, 0.9)
D, EXPERT = 7168, 3 * 7168 * 2048
COPY_BYTES = (D + D // 128 * 4) + 2 * D  # FP8 dispatch copy with scales + bf16 combine copy
NIC, HBM, FP8 = 50e9, 3.35e12, 2 * 989e12
DEEPEP_EP32_US = 155 + 273  # DeepEP docs/legacy.md, low-latency dispatch + combine at EP32


def glued(key):
    return chapter_outputs.glued(NB, key)


def printed(marker):
    return chapter_outputs.printed(NB, marker).splitlines()


def layer_s(recv):
    a2a = recv * COPY_BYTES * (EP - 1) / EP / NIC
    return a2a + max(E // EP * EXPERT / HBM, 2 * EXPERT * recv / FP8)


def counts(choices, n):
    out = [0] * n
    for x in np.asarray(choices).ravel().tolist():
        out[x] += 1
    return out


def ranks(per_expert):
    return [sum(per_expert[r * (E // EP):(r + 1) * (E // EP)]) for r in range(EP)]


def ratio(xs):
    return max(xs) / (sum(xs) / len(xs))


def routing():
    rng = np.random.default_rng(2424)
    layers = [mk.route_tokens(TOK, E, K, rng, popularity=None if a == 0 else
                              rng.permutation(1.0 / np.arange(1, E + 1) ** a)) for a in SKEWS]
    uniform = [mk.route_tokens(TOK, E, K, rng) for _ in range(50)]
    hot = rng.permutation(1.0 / np.arange(1, E + 1) ** 0.9)
    window = [mk.route_tokens(TOK, E, K, rng, popularity=hot) for _ in range(8)]
    nxt = mk.route_tokens(TOK, E, K, rng, popularity=hot)
    return layers, uniform, window, nxt


LAYERS_R, UNIFORM, WINDOW, NEXT = routing()


def metrics(choices):
    pe = counts(choices, E)
    mean = sum(pe) / E
    cv = math.sqrt(sum((c - mean) ** 2 for c in pe) / E) / mean
    cap = int(1.25 * TOK * K / E)
    over = sum(max(c - cap, 0) for c in pe) / (TOK * K)
    ent = -sum(c / (TOK * K) * math.log(c / (TOK * K)) for c in pe if c) / math.log(E)
    pr = ranks(pe)
    m = sum(pr) / EP
    return pe, pr, dict(expert=ratio(pe), cv=cv, rank=ratio(pr), over=over, ent=ent,
                        time=layer_s(max(pr)) / layer_s(m), wait=1 - layer_s(m) / layer_s(max(pr)))


def test_per_layer_table():
    lines = printed("def layer_metrics(")
    for a, choices, line in zip(SKEWS, LAYERS_R, lines[1:5]):
        _, _, r = metrics(choices)
        assert line == (f"{'a = ' + str(a):<16}{r['expert']:>16.2f}{r['cv']:>6.2f}{r['rank']:>14.2f}"
                        f"{r['over']:>14.1%}{r['ent']:>9.3f}{r['time']:>9.2f}x{r['wait']:>16.0%}")
        tag = f"{int(10 * a):02d}"
        assert glued(f"imb_rank_{tag}") == f"{r['rank']:.2f}"
        assert glued(f"imb_expert_{tag}") == f"{r['expert']:.1f}"
        assert glued(f"imb_time_{tag}") == f"{r['time']:.2f}"
        assert glued(f"imb_wait_{tag}") == f"{r['wait']:.0%}"
        assert glued(f"imb_entropy_{tag}") == f"{r['ent']:.2f}"
    # uniform routing drops nothing at 1.25 and the skew raises every imbalance number monotonically
    rs = [metrics(c)[2] for c in LAYERS_R]
    assert rs[0]["over"] == 0.0
    for key in ("expert", "cv", "rank", "over", "time"):
        assert all(x[key] < y[key] for x, y in zip(rs, rs[1:])), key
    assert all(x["ent"] > y["ent"] for x, y in zip(rs, rs[1:]))
    # the prose: the hottest expert's ratio is far above its GPU's, and entropy stays high in the worst layer
    assert rs[2]["expert"] > 4 * rs[2]["rank"] and rs[3]["ent"] > 0.85 and rs[3]["rank"] > 3


def test_balancedness_and_gpu_view():
    prs = [metrics(c)[1] for c in LAYERS_R]
    bal = sum(sum(p) / EP for p in prs) / sum(max(p) for p in prs)
    totals = [sum(p[g] for p in prs) for g in range(EP)]
    assert glued("imb_balancedness") == f"{bal:.2f}"
    assert glued("imb_gpu_view") == f"{ratio(totals):.2f}"
    assert glued("imb_step_factor") == f"{1 / bal:.2f}"
    assert 1 / bal > ratio(totals)  # the per-GPU total hides what the sum of per-layer maxima pays
    # vLLM's code at 50feac95: for each rank, mean and max over the layers, then summed over ranks
    coded = sum(sum(p[g] for p in prs) / len(prs) for g in range(EP)) / sum(max(p[g] for p in prs) for g in range(EP))
    assert glued("imb_bal_coded") == f"{coded:.2f}"
    assert coded > bal + 0.1  # the bug reports these layers as far better balanced than they are
    # and it reads exactly 1.0 when the same rank is the hottest in every layer, however hot
    same = [[100] * (EP - 1) + [300]] * 4
    assert sum(sum(p[g] for p in same) / 4 for g in range(EP)) / sum(max(p[g] for p in same) for g in range(EP)) == 1.0
    line = printed("def layer_metrics(")[-2]
    assert line == (f"across the 4 layers: balancedness (sum of per-layer means / sum of per-layer maxima) {bal:.2f}, "
                    f"so the step pays {1 / bal:.2f}x; reduced over layers instead {coded:.2f}; "
                    f"per-GPU totals max/mean {ratio(totals):.2f}")


def test_balanced_layer_and_deepep():
    mean = TOK * K / EP
    assert mean == 1024
    a2a = mean * COPY_BYTES * (EP - 1) / EP / NIC
    assert glued("imb_balanced_us") == f"{1e6 * layer_s(mean):.0f}"
    assert glued("imb_a2a_us") == f"{1e6 * a2a:.0f}"
    assert glued("imb_deepep_us") == str(DEEPEP_EP32_US)
    assert abs(1e6 * a2a - DEEPEP_EP32_US) / DEEPEP_EP32_US < 0.05  # "close to DeepEP's measured"
    knee = E // EP * EXPERT / HBM * FP8 / (2 * EXPERT)
    assert f"compute-bound above {knee:,.0f} copies a GPU" in printed("def layer_metrics(")[-1]


def test_thresholds_and_noise():
    mean = TOK * K / EP
    grid = [round(1 + i / 100, 2) for i in range(301)]
    cost = [layer_s(m * mean) / layer_s(mean) for m in grid]
    warn = next(m for m, c in zip(grid, cost) if c >= 1.10)
    page = next(m for m, c in zip(grid, cost) if c >= 1.25)
    assert glued("imb_warn") == f"{warn:.2f}" and glued("imb_page") == f"{page:.2f}"
    lines = printed("ratios = np.round(")
    assert lines[5] == f"MoE layers +10% at rank max/mean {warn:.2f}, +25% at {page:.2f}"
    for line, m in zip(lines, (1.1, 1.25, 1.5, 2.0, 3.0)):
        assert line == f"rank max/mean {m:.2f}: MoE layer {layer_s(m * mean) / layer_s(mean):.2f}x the balanced time"
    steps = [ranks(counts(c, E)) for c in UNIFORM]
    one = [ratio(s) for s in steps]
    win = [sum(s[g] for s in steps) for g in range(EP)]
    assert glued("imb_noise_max") == f"{max(one):.2f}" and glued("imb_noise_mean") == f"{sum(one) / 50:.2f}"
    assert glued("imb_noise_window") == f"{ratio(win):.2f}"
    assert round(max(one), 2) >= warn > ratio(win)  # steps reach it as printed, the window not


def replicate(load, n):
    copies = [1] * len(load)
    for _ in range(n - len(load)):
        best = max(range(len(load)), key=lambda e: (load[e] / copies[e], -e))
        copies[best] += 1
    return copies


def pack(weights, m):
    per, totals, items, out = len(weights) // m, [0.0] * m, [0] * m, [None] * len(weights)
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        j = min((g for g in range(m) if items[g] < per), key=lambda g: (totals[g], g))
        out[i], totals[j], items[j] = j, totals[j] + weights[i], items[j] + 1
    return out


def test_eplb_action():
    window = counts(np.concatenate(WINDOW), E)
    copies = replicate(window, E + SPARE)
    slot_expert = [e for e in range(E) for _ in range(copies[e])]
    slot_gpu = pack([window[e] / copies[e] for e in slot_expert], EP)
    nxt = counts(NEXT, E)
    before = ranks(nxt)
    after = [0.0] * EP
    for e, g in zip(slot_expert, slot_gpu):
        after[g] += nxt[e] / copies[e]
    tb, ta = layer_s(max(before)), layer_s(max(after))
    moved = sum(g != e // (E // EP) for e, g in zip(slot_expert, slot_gpu))
    move_s = moved * EXPERT / EP / NIC
    assert glued("imb_before") == f"{ratio(before):.2f}" and glued("imb_after") == f"{ratio(after):.2f}"
    assert glued("imb_before_us") == f"{1e6 * tb:,.0f}" and glued("imb_after_us") == f"{1e6 * ta:.0f}"
    assert glued("imb_moved_gb") == f"{moved * EXPERT / 1e9:.1f} GB"
    assert glued("imb_move_s") == f"{LAYERS * move_s:.2f}"
    assert glued("imb_payback") == f"{move_s / (tb - ta):.0f}"
    assert ratio(after) < 1.13 < ratio(before)  # the plan brings the layer under the warning line
    # the same plan quality at the a = 0.3 layer's ratio: the bytes take many more steps to repay
    mild = metrics(LAYERS_R[1])[2]["rank"]
    mean = TOK * K / EP
    gain = layer_s(mild * mean) - layer_s(ratio(after) * mean)
    assert glued("imb_rank_03") == f"{mild:.2f}"
    assert glued("imb_gain_mild_us") == f"{1e6 * gain:.0f}" and glued("imb_payback_mild") == f"{move_s / gain:.0f}"
    assert move_s / gain > 5 * move_s / (tb - ta)
    step_ms = 1e3 * LAYERS * layer_s(mean)
    assert glued("imb_step_moe_ms") == f"{step_ms:.0f}"
    assert LAYERS * move_s > 10 * step_ms / 1e3  # a synchronous move stalls for many steps' worth


def test_section_cites_and_boxes():
    cells = ["".join(c["source"]) for c in NB["cells"]]
    start = next(i for i, s in enumerate(cells) if s.startswith("(moe_serving-imbalance-metrics)="))
    assert cells[start + 7].startswith("(moe_serving-routing-locality)=")  # the next section (round 27n)
    section = "\n".join(cells[start:start + 7])
    for cite in ("vllmeplbstate{EplbState.step}", "vllmeplbstate{EplbModelState}", "deepseekv3{§3.4.1}",
                 "{cite}`deepseekeplb`", "{cite}`vllmeplb`", "deepeplegacy{Low-latency kernels with pure RDMA}",
                 "{cite:p}`nvidiah100`", "vllmeplbbalancedfix{PR 51784}", "deepseekv3{§3.4.2}",
                 "{cite:p}`deepeplowlatencystats`", "sglangeplbmanager{EPLBManager._check_rebalance_needed}",
                 "vllmeplbstate{EplbState.rearrange}", "{cite:p}`nvmlutilization`",
                 "deepseekinfra2025{Expert-Parallel Load Balancer}", "vllmeplb{EPLBConfig.log_balancedness}"):
        assert cite in section, cite
    assert section.count("```{admonition} In the interview") == 1
    assert section.count(":class: dropdown\n") == 3 and "followup" not in section
    assert section.count("**Strong answer.**") == section.count("**Listening for.**") == section.count("**Trap.**") == 3
    bib = (chapter_outputs.BOOK.parent / "references.bib").read_text()
    assert "@misc{vllmeplbstate," in bib and "balancedness = avg\\_tokens / max\\_tokens" in bib
    for key in ("vllmeplbbalancedfix", "deepeplowlatencystats", "sglangeplbmanager"):
        assert f"@misc{{{key}," in bib, key
    assert "FP8 Tensor Core 3,958 TFLOPS with sparsity (1,979 dense)" in bib and FP8 == 2 * 989e12
    assert "assumed" not in section  # the FP8 rate is cited, not assumed
