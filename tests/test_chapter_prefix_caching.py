"""The chapter "Prefix caching in depth" says what the engines cache of a finished request (issue 36).

Its last output token was sampled and never run through the model: vLLM caches full blocks of the
computed tokens (``allocate_slots`` caps them at ``request.num_tokens``), SGLang inserts
``(origin_input_ids + output_ids)[:-1]``. Recomputed here by hand, not read from the notebook.
"""
import json

from booktoc import REPO_ROOT

import mha_kit as mk


def _text():
    nb = json.loads((REPO_ROOT / "book" / "prefix_caching.ipynb").read_text())
    return " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_a_finished_request_caches_its_computed_tokens_only():
    # Request 1: prompt 1..10, output [11, 12]. Computed: 1..11 (12 was sampled last). Blocks of 4: [1-4] [5-8].
    computed = list(range(1, 11)) + [11]
    full_blocks = len(computed) // 4
    assert full_blocks == 2
    cache = mk.PrefixBlockCache(4, 100)
    cache.serve(list(range(1, 11)), [11, 12])
    # A prompt 1..13 reuses its cached leading blocks, at most 12 tokens: 2 blocks = 8 (not 3 blocks = 12).
    assert cache.match(list(range(1, 14))) == full_blocks * 4 == 8


def test_the_chapter_states_the_rule_and_its_limits():
    text = _text()
    assert "never went through the model, so it has no keys or values" in text
    assert "`sglangradixcache{cache_finished_req}`" in text and "`vllmcacheblocks{" in text
    assert "In exact arithmetic it changes nothing in the output" in text
    assert "`vllmbatchinvariance" in text
    assert "drops the reasoning of earlier turns" in text
    assert "finds its history, answer included," not in text  # the reasoning and the last token say otherwise


def test_branching_program_reuse():
    """prefix_caching-radix-beyond: a 40-token question, four 12-token answers, a 3-token follow-up on each."""
    import mha_kit as mk

    q, a, f = 40, 12, 3
    total = q + 4 * (q + a) + 4 * (q + a + f)
    tree = 4 * q + 4 * (q + a)  # each answer reuses the question, each follow-up its answer
    blocks = 4 * (q // 16 * 16) + 4 * ((q + a) // 16 * 16)  # full blocks of 16 only
    assert (total, tree, blocks) == (468, 368, 320)
    program = [list(range(q))] + [list(range(q)) + [100 + i] * a for i in range(4)]
    program += [p + [7, 8, 9] for p in program[1:]]
    radix, paged = mk.RadixPrefixCache(10_000), mk.PrefixBlockCache(16, 1_000)
    assert sum(radix.serve(p) for p in program) == tree
    assert sum(paged.serve(p) for p in program) == blocks


def test_what_breaks_a_hit_counts_by_hand():
    # "What breaks a hit": a 70-token prompt in blocks of 16, cached under tenant A's salt.
    # Reused = whole leading blocks before the first difference, at most 70 - 1 = 69 tokens.
    block, n = 16, 40 + 30
    assert min(n // block * block, (n - 1) // block * block) == 64  # identical prompt: 4 blocks, not 70
    assert 35 // block * block == 32  # token 35 differs: blocks [0-15] and [16-31] survive
    assert 3 // block * block == 0  # token 3 differs: nothing survives
    prompt = list(range(1000, 1040)) + list(range(2000, 2030))
    cache = mk.PrefixBlockCache(block, 1000)
    cache.serve(prompt, salt="tenant-a")
    assert cache.match(prompt, salt="tenant-a") == 64
    assert cache.match(prompt[:35] + [9] + prompt[36:], salt="tenant-a") == 32
    assert cache.match(prompt[:3] + [9] + prompt[4:], salt="tenant-a") == 0
    assert cache.match(prompt, salt="tenant-b") == 0 and cache.match(prompt) == 0


def test_the_chapter_lists_what_breaks_a_hit_with_vllm_code():
    text = _text()
    for key in ("`vllmhashkeys{generate_block_hash_extra_keys}`", "`vllmhashkeys{init_none_hash}`",
                "`lmcachekey{", "`vllmprefixcaching{\"Cache Isolation for Security\"}`"):
        assert key in text
    assert "(prefix_caching-what-breaks)=" in text


def test_fan_out_tail_of_a_sharded_search():
    # grade5a: a search that waits for n shards, each late with probability p, is late with 1 - (1 - p)^n
    # (Dean and Barroso 2013: 1% over 100 servers gives 63%).
    assert round(1 - 0.99**100, 2) == 0.63
    assert round(1 - 0.99**20, 2) == 0.18
    text = _text()
    assert "1-(1-p)^n" in text and "hedged request" in text


def test_hash_collision_numbers_by_hand():
    """prefix_caching-hashed: a billion cached blocks under a 64-bit and a 256-bit hash (birthday bound)."""
    import math

    n = 10**9
    pairs = n * (n - 1) // 2  # pairs of blocks that could collide
    p64 = 1 - math.exp(-pairs / 2**64)
    p256 = pairs / 2**256  # exp(-x) ~ 1 - x for x this small
    assert f"{p64:.1e}" == "2.7e-02" and f"{p256:.1e}" == "4.3e-60"
    assert f"{mk.hash_collision_probability(n, 64):.1e}" == f"{p64:.1e}"
    assert f"{mk.hash_collision_probability(n, 256):.1e}" == f"{p256:.1e}"
    assert f"{1 / p256:.1e}" == "2.3e+59"  # the chapter prints SHA-256's as odds, one chance in 1/p
    text = _text()
    assert "`nanovllmblockmanager{BlockManager.allocate}`" in text and "`menezes1996hac{" in text
    assert "bit-for-bit reuse needs batch-invariant kernels" in text


def test_two_workloads_cells_sit_under_their_heading():
    """The workloads' code and discussion come right after '## Two workloads', before its ### subsections."""
    nb = json.loads((REPO_ROOT / "book" / "prefix_caching.ipynb").read_text())
    srcs = ["".join(c["source"]) for c in nb["cells"]]
    start = next(i for i, s in enumerate(srcs) if "## Two workloads" in s)
    beyond = next(i for i, s in enumerate(srcs) if s.startswith("(prefix_caching-radix-beyond)="))
    between = "\n".join(srcs[start + 1:beyond])
    assert "system_requests = " in between and "results[workload, design]" in between
    assert "Every request but the first reuses the system prompt" in between
    non_prefix = next(i for i, s in enumerate(srcs) if s.startswith("(prefix_caching-non-prefix)="))
    assert "Every request but the first" not in "\n".join(srcs[non_prefix:])
