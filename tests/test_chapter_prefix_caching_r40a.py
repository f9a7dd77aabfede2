"""Section prefix_caching-eviction-beyond-lru of "Prefix caching in depth": eviction policies on chained blocks.

The chapter's table is recomputed here by a second implementation: the seeded trace is drawn again by code written
out here (the same draws in the same order), and every policy is a brute-force scan over the cached blocks at each
eviction (no heaps, no lazy deletion), from the rule each policy states. Then a hand-made trace whose evictions are
known, the bound's ordering, and the section's citations.
"""
import math
import re

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")
MARKER = "ev_requests, ev_parent = eviction_trace()"
BLOCK = 16
CAPACITIES = (40, 80, 160, 320)
POLICIES = ("lru", "leaf-lru", "reuse-aware", "belady")


def draw_trace():
    """60 chats on a shared 2-block system prompt; 200 one-off API calls on 4 templates of 4 blocks (seed 40)."""
    rng = np.random.default_rng(40)
    parent, reqs = [], []  # parent[b] for block b = len(parent) at its creation

    def chain(start, count):
        out = list(start)
        for _ in range(count):
            parent.append(out[-1] if out else None)
            out.append(len(parent) - 1)
        return out

    system = chain([], 2)
    for _ in range(60):
        t, prompt = float(rng.uniform(0, 600.0)), system
        for turn in range(1, 9):
            prompt = chain(prompt, int(rng.integers(2, 5)))
            reqs.append((t, "chat", turn, prompt))
            if rng.random() >= (0.5 if turn == 1 else 0.8):
                break
            t += float(rng.exponential(30.0))
    templates = [chain([], 4) for _ in range(4)]
    for _ in range(200):
        prompt = chain(templates[int(rng.integers(0, 4))], int(rng.integers(1, 4)))
        reqs.append((float(rng.uniform(0, 600.0)), "api", 1, prompt))
    reqs.sort(key=lambda r: r[0])
    return reqs, dict(enumerate(parent))


def value(p, gap, age):
    """q / gap with q = p e^(-age/gap) / (p e^(-age/gap) + 1 - p): reuse per second of room."""
    x = p * math.exp(-age / gap)
    return 0.0 if x == 0 else x / (x + (1 - p)) / gap


def replay(reqs, parent, capacity, policy):
    """Hits (blocks in the leading cached run) with a brute-force choice of victim at every eviction."""
    uses = {}
    for i, r in enumerate(reqs):
        for b in r[3]:
            uses.setdefault(b, []).append(i)
    state, seen, hits, clock = {}, set(), 0, 0  # state[b] = (clock, time, (p, gap)) of its last touch
    for i, (t, cat, turn, prompt) in enumerate(reqs):
        k = 0
        while k < len(prompt) and prompt[k] in state:
            k += 1
        hits += k
        for b in prompt:
            clock += 1
            if cat == "chat":
                cls = (0.5 if turn == 1 else 0.8, 30.0)
            else:
                cls = (1.0 if b in seen else 0.0, 12.0)
            state[b] = (clock, t, cls)
            seen.add(b)
        while len(state) > capacity:
            has_child = {parent[b] for b in state}
            cands = [b for b in state if b not in prompt and (policy == "lru" or b not in has_child)]
            if policy in ("lru", "leaf-lru"):
                victim = min(cands, key=lambda b: state[b][0])
            elif policy == "reuse-aware":
                victim = min(cands, key=lambda b: (value(*state[b][2], t - state[b][1]), state[b][1], b))
            else:
                victim = min(cands, key=lambda b: (-next((j for j in uses[b] if j > i), math.inf), b))
            del state[victim]
    return hits


def _table():
    text = chapter_outputs.printed(NB, MARKER)
    rows = re.findall(r"^\s*(\d+) blocks\s+([\d,]+)\s+([\d.]+%)\s+([\d.]+%)\s+([\d.]+%)\s+([\d.]+%)$", text, re.M)
    return text, {int(r[0]): (r[1], r[2:]) for r in rows}


def test_table_recomputed():
    """Every cell of the printed table, the trace's size and the no-eviction reuse, from the second implementation."""
    reqs, parent = draw_trace()
    total = sum(len(r[3]) for r in reqs)
    text, table = _table()
    ideal = replay(reqs, parent, len(parent), "lru")
    assert (f"{len(reqs)} requests, {total * BLOCK:,} prompt tokens, {len(parent)} distinct blocks; no eviction: "
            f"{ideal * BLOCK:,} tokens hit ({100 * ideal / total:.1f}%)") in text
    assert sorted(table) == list(CAPACITIES)
    hits = {}
    for c in CAPACITIES:
        hits[c] = [replay(reqs, parent, c, p) for p in POLICIES]
        assert table[c] == (f"{c * BLOCK:,}", tuple(f"{100 * h / total:.1f}%" for h in hits[c])), c
        lru, leaf, aware, belady = hits[c]
        assert max(lru, leaf, aware) <= belady <= ideal  # the offline bound is above every online policy
    assert hits[40][0] < hits[40][1] < hits[40][2]  # at the smallest cache: LRU < leaf-first < reuse-aware
    assert chapter_outputs.glued(NB, "pc_ev_small_aware") == f"{100 * hits[40][2] / total:.1f}%"
    assert chapter_outputs.glued(NB, "pc_ev_big_belady") == f"{100 * hits[320][3] / total:.1f}%"
    assert chapter_outputs.glued(NB, "pc_ev_requests") == f"{len(reqs)}"
    assert chapter_outputs.glued(NB, "pc_ev_block") == f"{BLOCK}"
    # the mean gap between calls on one API template: 200 calls over 600 s, spread over 4 templates
    api = [r for r in reqs if r[1] == "api"]
    assert chapter_outputs.glued(NB, "pc_ev_api_gap") == f"{600.0 / (len(api) / 4):.0f}"


def test_hand_made_trace():
    """Capacity 2: A = a0 -> a1, B = b0, A again. LRU evicts the head a0 and A hits 0; leaf-first evicts a1, A hits 1."""
    reqs = [(0.0, "chat", 1, [0, 1]), (1.0, "chat", 1, [2]), (2.0, "chat", 1, [0, 1])]
    parent = {0: None, 1: 0, 2: None}
    assert replay(reqs, parent, 2, "lru") == 0
    assert replay(reqs, parent, 2, "leaf-lru") == 1
    assert chapter_outputs.glued(NB, "pc_ev_tiny_lru") == "0"
    assert chapter_outputs.glued(NB, "pc_ev_tiny_leaf") == "1"
    assert "A's second visit hits {'lru': 0, 'leaf-lru': 1} blocks" in chapter_outputs.printed(NB, MARKER)


def test_section_cites_and_hedges():
    text = chapter_outputs.section(NB, "prefix_caching-eviction-beyond-lru", "prefix_caching-routing")
    for key in ("lmcache056src", "wang2025kvcachewild", "belady1966", "sglangradixevict"):
        assert f"{{cite:p}}`{key}{{" in text, key
    for ref in ("prefix_caching-hashed", "prefix_caching-radix"):
        assert f"{{ref}}`{ref}`" in text
    assert "not the\npaper's" in text or "not the paper's" in text
    assert "23.9" not in text and "41.9" not in text  # figures read only in summaries, not in the paper
    assert "Alibaba" not in text  # the cited abstract does not name the provider
    assert "Belady's bound" not in text and "not a proven upper bound" in text  # MIN is a yardstick under these rules
    assert "counts up to 8" in text  # LFU keeps a dead chat's head, not the whole chat
