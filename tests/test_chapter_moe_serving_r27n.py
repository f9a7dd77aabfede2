"""Sections moe_serving-dense-or-moe and moe_serving-routing-locality of "Mixture-of-experts serving".

Dense or MoE: the weights to hold, the 80 GB GPUs, 6 x active FLOPs a token and the bf16 weight bytes read per
generated token at batches 1, 64 and 256, recomputed from the configs (DeepSeek-V2: hidden 5120, expert width 1536,
59 MoE layers of 160 routed experts, 6 a token, 236B total; DeepSeek-V3: hidden 7168, expert width 2048, 58 MoE
layers of 256, 8 a token, 671B total) and the expected distinct experts E(1 - (1 - k/E)^n) written out again; Llama
3 70B's total is the input. The batch from which DeepSeek-V2 reads at least the dense model's bytes is compared
exactly.

Routing locality: the random-baseline repeat rates counted over all pairs of top-2 choices (not from the binomial
formula the chapter uses), and the LRU hit rates recomputed from LRU's stack property on the same routing, checked
against an OrderedDict cache on one full sequence (the routing is regenerated with the chapter's seed and call order:
it is the input, not the result). Mixtral's Table 5 (arXiv 2401.04088, §5, p. 8) is typed here again from the paper
and compared cell by cell with what the chapter's data cell prints as ranges; the stickiness s that reproduces each
rate is solved from the sticky router's repeat probabilities derived here by enumeration (not the chapter's closed
forms), and the hit rates at the calibrated s are re-simulated with the chapter's seed. The batch at which V2's
routed experts reach the H100's bf16 ridge is recomputed from the H100's published 989 TFLOP/s and 3.35 TB/s.
"""
import functools
import itertools
import math
from collections import OrderedDict

import numpy as np

import chapter_outputs
import mha_kit as mk

NB = chapter_outputs.notebook("moe_serving")
BATCHES = (1, 64, 256)


def glued(key):
    return chapter_outputs.glued(NB, key)


def printed(marker):
    return chapter_outputs.printed(NB, marker).splitlines()


def touched(n, e, k):
    return e * (1 - (1 - k / e) ** n)


MOE = {  # total params, expert params, MoE layers, routed experts, experts a token
    "DeepSeek-V2": (236e9, 3 * 5120 * 1536, 59, 160, 6),
    "DeepSeek-V3": (671e9, 3 * 7168 * 2048, 58, 256, 8),
}


def read_params(name, n):
    total, expert, layers, e, k = MOE[name]
    return total - layers * e * expert + layers * touched(n, e, k) * expert


def test_dense_or_moe_table():
    llama_total = mk.model_params(mk.MODEL_FACTS["llama-3-70b"])
    rows = {line[:14].strip(): line[14:].split() for line in printed("dm_hold_")[1:4]}
    expect = {"Llama 3 70B": (llama_total, llama_total, [llama_total * 2 / b / 1e9 for b in BATCHES])}
    for name in MOE:
        expect[name] = (MOE[name][0], read_params(name, 1), [read_params(name, b) * 2 / b / 1e9 for b in BATCHES])
    for name, (total, active, reads) in expect.items():
        cols = rows[name]
        assert cols[0] == f"{total / 1e9:.0f}B" and cols[1] == f"{active / 1e9:.1f}B"
        assert int(cols[2]) == round(total * 2 / 1e9)
        assert int(cols[3]) == math.ceil(total * 2 / 80e9)
        assert int(cols[4]) == round(6 * active / 1e9)
        assert [float(x) for x in cols[5:8]] == [round(r, 2) for r in reads]
    assert rows["DeepSeek-V2"][8:] == [f"{touched(64, 160, 6):.0f}", "of", "160"]
    assert [math.ceil(MOE[n][0] * 2 / 80e9) for n in MOE] == [6, 17]


def test_crossover_batch_exact():
    llama_total = mk.model_params(mk.MODEL_FACTS["llama-3-70b"])
    cross = next(b for b in range(1, 1025) if read_params("DeepSeek-V2", b) >= llama_total)
    assert cross == 8
    assert glued("dm_cross") == str(cross)
    assert glued("dm_flops_ratio") == f"{llama_total / read_params('DeepSeek-V2', 1):.1f}"
    assert glued("dm_read256_v2") == f"{read_params('DeepSeek-V2', 256) * 2 / 256 / 1e9:.2f}"
    assert glued("dm_touch64_v2") == f"{touched(64, 160, 6):.0f}"


def test_random_baseline_by_enumeration():
    pairs = list(itertools.combinations(range(8), 2))
    shared = sum(1 for a in pairs for b in pairs if set(a) & set(b))
    assert (shared, len(pairs) ** 2) == (13 * 28, 28 * 28)  # 13/28 of ordered pairs of pairs share an expert
    assert glued("loc_any_frac") == "13/28"
    assert glued("loc_any") == f"{shared / len(pairs) ** 2:.1%}" == "46.4%"
    assert glued("loc_first") == f"{1 / 8:.1%}"


def sticky_routing(rng, s, steps=20_000):
    """The chapter's sticky router, in its call order: repeat the last pair with probability s, else draw a new one."""
    seq = [rng.choice(8, 2, replace=False)]
    for _ in range(steps - 1):
        seq.append(seq[-1] if rng.random() < s else rng.choice(8, 2, replace=False))
    return np.array(seq)


def routing():
    rng = np.random.default_rng(2401)
    return {s: sticky_routing(rng, s) for s in (0.0, 0.3, 0.6)}


def lru(seq, slots):
    cache, hits = OrderedDict(), 0
    for pair in seq.tolist():
        hits += sum(1 for e in pair if e in cache)
        for e in pair:
            cache.pop(e, None)
            cache[e] = True
        while len(cache) > slots:
            cache.popitem(last=False)
    return hits / (2 * len(seq))


def lru_stack(seq, slots):
    """The same hit rates from LRU's stack property: an expert is cached iff it was used before and fewer than `slots`
    experts were used more recently. Stamps 2i and 2i + 1 order the pair as the cache inserts it."""
    steps = len(seq)
    stamp = np.full((steps, 8), -1)
    stamp[np.arange(steps)[:, None], seq] = 2 * np.arange(steps)[:, None] + np.arange(2)
    last = np.vstack([np.full((1, 8), -1), np.maximum.accumulate(stamp, axis=0)[:-1]])  # before step i
    mine = np.take_along_axis(last, seq, axis=1)  # (steps, 2)
    newer = (last[:, None, :] > mine[:, :, None]).sum(axis=2)
    return {c: np.sum((mine >= 0) & (newer < c)) / (2 * steps) for c in slots}


def test_lru_hit_rates():
    runs = routing()
    lines = printed("lru_hit_rate")
    table = [line.split() for line in lines[2:5]]
    rates = {s: lru_stack(seq, (2, 3, 4, 6)) for s, seq in runs.items()}
    assert lru(runs[0.3], 3) == rates[0.3][3]  # the OrderedDict cache itself, on one full sequence
    for row, (s, seq) in zip(table, runs.items()):
        share = np.mean((seq[:-1, :, None] == seq[1:, None, :]).any(axis=(1, 2)))  # the pairs share an expert
        assert float(row[0]) == s and row[1] == f"{share:.1%}"
        assert row[2:] == [f"{h:.1%}" for h in rates[s].values()]
    rand4 = rates[0.0][4]
    assert abs(rand4 - 0.5) < 0.01  # any cache of 4 of 8 under uniform routing: 4/8 on average
    assert glued("loc_hit4_6") == f"{rates[0.6][4]:.0%}"
    assert glued("loc_miss_rand") == f"{32 * 2 * (1 - rand4):.0f}"
    expert = 3 * 4096 * 14336 * 2
    assert glued("loc_expert_mb") == f"{expert / 1e6:.0f}" == "352"
    assert glued("loc_miss_ms") == f"{expert / 64e9 * 1e3:.1f}"


# Mixtral of Experts, §5, Table 5: first choice L0, L15, L31; first or second choice L0, L15, L31 (percent)
TABLE5 = {
    "ArXiv": (14.0, 27.9, 22.7, 46.5, 62.3, 52.9),
    "DM Mathematics": (14.1, 28.4, 19.7, 44.9, 67.0, 44.5),
    "Github": (14.9, 28.1, 19.7, 49.9, 66.9, 49.2),
    "Gutenberg": (13.9, 26.1, 26.3, 49.5, 63.1, 52.2),
    "PhilPapers": (13.6, 25.3, 22.1, 46.9, 61.9, 51.3),
    "PubMed Abstracts": (14.2, 24.6, 22.0, 48.6, 61.6, 51.8),
    "StackExchange": (13.6, 27.2, 23.6, 48.2, 64.6, 53.6),
    "Wikipedia (en)": (14.4, 23.6, 25.3, 49.8, 62.1, 51.8),
}


@functools.cache
def fresh_repeat_probs():
    """P(first choice repeats), P(pairs share an expert) for two fresh draws, by enumerating ordered top-2 draws."""
    ordered = list(itertools.permutations(range(8), 2))
    first = sum(a[0] == b[0] for a in ordered for b in ordered) / len(ordered) ** 2
    share = sum(bool(set(a) & set(b)) for a in ordered for b in ordered) / len(ordered) ** 2
    return first, share


def sticky_repeat_probs(s):
    """The same under the sticky router: with probability s the pair is repeated outright."""
    first, share = fresh_repeat_probs()
    return s + (1 - s) * first, s + (1 - s) * share


def solve_s(target, which):
    lo, hi = -1.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sticky_repeat_probs(mid)[which] < target else (lo, mid)
    return (lo + hi) / 2


def col(c):
    return [row[c] / 100 for row in TABLE5.values()]


def test_mixtral_table5_ranges_and_baseline():
    lines = printed("MIXTRAL_TABLE5")
    rows = {int(line.split()[0]): line.split() for line in lines[2:5]}
    for j, layer in enumerate((0, 15, 31)):
        f, e = col(j), col(3 + j)
        fr, er = f"{min(f):.1%}–{max(f):.1%}", f"{min(e):.1%}–{max(e):.1%}"
        assert rows[layer][1] == fr and glued(f"mx_first_l{layer}") == fr
        assert rows[layer][6] == er and glued(f"mx_any_l{layer}") == er
        assert rows[layer][2] == f"{sum(f) / len(f) * 8:.2f}"
    assert glued("mx_first_l0") == "13.6%–14.9%" and glued("mx_any_l15") == "61.6%–67.0%"
    below = [(name, layer) for name, row in TABLE5.items() for j, layer in enumerate((0, 15, 31))
             if row[3 + j] / 100 < 1 - 15 / 28]  # C(6,2)/C(8,2) = 15/28 disjoint
    assert below == [("DM Mathematics", 0), ("DM Mathematics", 31)]
    assert glued("mx_below") == "DM Mathematics at layers 0 and 31"
    assert glued("mx_ratio_l15") == f"{sum(col(1)) / len(col(1)) / (1 / 8):.1f}" == "2.1"


def test_mixtral_stickiness_and_hit_rates():
    assert glued("mx_s15_first") == f"{solve_s(min(col(1)), 0):.2f}–{solve_s(max(col(1)), 0):.2f}" == "0.13–0.18"
    assert glued("mx_s15_either") == f"{solve_s(min(col(4)), 1):.2f}–{solve_s(max(col(4)), 1):.2f}" == "0.28–0.38"
    assert glued("mx_s0_first") == f"{solve_s(max(col(0)), 0):.2f}"
    stick = [max(0.0, solve_s(sum(col(0)) / 8, 0)), solve_s(sum(col(1)) / 8, 0), solve_s(sum(col(4)) / 8, 1)]
    rng = np.random.default_rng(504)
    hits = [lru_stack(sticky_routing(rng, s), (4,))[4] for s in stick]
    for tag, s, h in zip(("l0", "l15f", "l15e"), stick, hits):
        assert glued(f"mx_s_{tag}") == f"{s:.2f}"
        assert glued(f"mx_hit_{tag}") == f"{h:.0%}"
    assert 0.5 < hits[0] < 0.53 and hits[0] < hits[1] < hits[2] < 0.7  # Mixtral is far below the s = 0.6 row
    assert glued("loc_pcie_gbs") == "64"


def test_compute_bound_batch_and_multiples():
    ridge = 989e12 / 3.35e12  # H100 SXM datasheet: dense bf16 FLOP/s over HBM3 B/s
    assert glued("dm_ridge") == f"{ridge:.0f}"
    assert glued("dm_per_expert_256") == f"{256 * 6 / 160:.1f}" == "9.6"
    assert glued("dm_cb_tokens_v2") == f"{round(ridge * 160 / 6, -2):,.0f}" == "7,900"
    llama_total = mk.model_params(mk.MODEL_FACTS["llama-3-70b"])
    assert glued("dm_bytes256_ratio") == f"{read_params('DeepSeek-V2', 256) / llama_total:.1f}"
    assert glued("dm_mult_v2") == f"{MOE['DeepSeek-V2'][0] / read_params('DeepSeek-V2', 1):.0f}" == "11"
    assert glued("dm_mult_v3") == f"{MOE['DeepSeek-V3'][0] / read_params('DeepSeek-V3', 1):.0f}" == "18"
