"""Sections moe_serving-dense-or-moe and moe_serving-routing-locality of "Mixture-of-experts serving".

Dense or MoE: the weights to hold, the 80 GB GPUs, 6 x active FLOPs a token and the bf16 weight bytes read per
generated token at batches 1, 64 and 256, recomputed from the configs (DeepSeek-V2: hidden 5120, expert width 1536,
59 MoE layers of 160 routed experts, 6 a token, 236B total; DeepSeek-V3: hidden 7168, expert width 2048, 58 MoE
layers of 256, 8 a token, 671B total) and the expected distinct experts E(1 - (1 - k/E)^n) written out again; Llama
3 70B's total is the input. The batch from which DeepSeek-V2 reads at least the dense model's bytes is compared
exactly.

Routing locality: the random-baseline repeat rates counted over all pairs of top-2 choices (not from the binomial
formula the chapter uses), and the LRU hit rates recomputed with an OrderedDict cache on the same routing (the
routing is regenerated with the chapter's seed and call order: it is the input, not the result).
"""
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


def routing():
    rng = np.random.default_rng(2401)
    out = {}
    for s in (0.0, 0.3, 0.6):
        seq = [tuple(rng.choice(8, 2, replace=False))]
        for _ in range(19_999):
            seq.append(seq[-1] if rng.random() < s else tuple(rng.choice(8, 2, replace=False)))
        out[s] = seq
    return out


def lru(seq, slots):
    cache, hits = OrderedDict(), 0
    for pair in seq:
        hits += sum(1 for e in pair if e in cache)
        for e in pair:
            cache.pop(e, None)
            cache[e] = True
        while len(cache) > slots:
            cache.popitem(last=False)
    return hits / (2 * len(seq))


def test_lru_hit_rates():
    runs = routing()
    lines = printed("lru_hit_rate")
    table = [line.split() for line in lines[2:5]]
    for row, (s, seq) in zip(table, runs.items()):
        share = sum(1 for a, b in zip(seq, seq[1:]) if set(a) & set(b)) / (len(seq) - 1)
        assert float(row[0]) == s and row[1] == f"{share:.1%}"
        hits = [lru(seq, c) for c in (2, 3, 4, 6)]
        assert row[2:] == [f"{h:.1%}" for h in hits]
    rand4 = lru(runs[0.0], 4)
    assert abs(rand4 - 0.5) < 0.01  # any cache of 4 of 8 under uniform routing: 4/8 on average
    assert glued("loc_hit4_6") == f"{lru(runs[0.6], 4):.0%}"
    assert glued("loc_miss_rand") == f"{32 * 2 * (1 - rand4):.0f}"
    expert = 3 * 4096 * 14336 * 2
    assert glued("loc_expert_mb") == f"{expert / 1e6:.0f}" == "352"
    assert glued("loc_miss_ms") == f"{expert / 64e9 * 1e3:.1f}"
