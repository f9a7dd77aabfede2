"""Section decoding_sampling-greedy-vs-beam of "Decoding and sampling": greedy and beam search as tree search.

Recomputed without mha_kit: greedy as a loop of list maxima over the bigram table, beam search as a short
loop of its own (finished hypotheses take their place in the top k, as in the chapter's search), the
bounded depth-first search with an explicit stack, the breadth-first count in closed form
5 (4^12 - 1) / 3, and the roofline step of Llama 3 8B on an H100 SXM from the model's shapes
(Llama 3 paper, Table 3: 32 layers, width 4096, 8 KV heads of 128, feed-forward 14336, vocabulary
128,256, untied output head) and NVIDIA's H100 SXM datasheet (3.35 TB/s, 989 dense bf16 TFLOP/s).
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("decoding_sampling")
LABEL = "decoding_sampling-greedy-vs-beam"
P = [
    [0.00, 0.50, 0.20, 0.15, 0.10, 0.05],
    [0.00, 0.00, 0.55, 0.20, 0.15, 0.10],
    [0.00, 0.60, 0.00, 0.15, 0.10, 0.15],
    [0.00, 0.10, 0.10, 0.10, 0.30, 0.40],
    [0.00, 0.15, 0.10, 0.30, 0.05, 0.40],
    [0.00, 0.00, 0.00, 0.00, 0.00, 1.00],
]
EOS, MAX_LEN = 5, 12


def glued(key):
    return chapter_outputs.glued(NB, key)


def lp(a, c):
    return math.log(P[a][c]) if P[a][c] > 0 else -math.inf


def greedy():
    seq = [0]
    while seq[-1] != EOS and len(seq) <= MAX_LEN:
        row = P[seq[-1]]
        seq.append(row.index(max(row)))
    return seq[1:]


def beam(k):
    live, done = [((0,), 0.0)], []
    for _ in range(MAX_LEN):
        grown = sorted(((s + (c,), v + lp(s[-1], c)) for s, v in live for c in range(6)), key=lambda x: -x[1])[:k]
        live = [(s, v) for s, v in grown if s[-1] != EOS]
        done += [(s, v) for s, v in grown if s[-1] == EOS]
        if not live:
            break
    s, v = max(done + live, key=lambda x: x[1])
    return list(s[1:]), math.exp(v)


def bounded_dfs():
    best, visited = (-math.inf, None), 0
    stack = [((0,), 0.0)]
    while stack:
        seq, score = stack.pop()
        if len(seq) > 1 and score <= best[0]:  # the bound, tested when the node's turn comes
            continue
        visited += 1
        if seq[-1] == EOS:
            best = max(best, (score, list(seq[1:])), key=lambda x: x[0])
            continue
        if len(seq) - 1 < MAX_LEN:
            order = sorted(range(6), key=lambda c: (-P[seq[-1]][c], c))  # likeliest first, ties by index
            stack += [(seq + (c,), score + lp(seq[-1], c)) for c in reversed(order) if P[seq[-1]][c] > 0]
    return best[1], math.exp(best[0]), visited


def test_greedy_misses_the_most_likely_output_and_widths_find_it():
    out = chapter_outputs.printed(NB, "ds_gb_first_exact")
    g = greedy()
    assert g == [1, 2] * 6 and f"greedy: {g} | ends with the end token: False" in out
    assert P[0][1] * P[1][5] < P[0][3] * P[3][5]  # 0.05 < 0.06: greedy's first token cannot start the optimum
    assert "P([1, 5]) = 0.050" in out and "P([3, 5]) = 0.060" in out
    first_exact = None
    for k in range(1, 7):
        tokens, prob = beam(k)
        assert f"width {k}: P = {prob:.4f}, ends: {str(tokens[-1] == EOS):<5} {tokens}" in out
        if tokens == [3, 5] and first_exact is None:
            first_exact = k
    assert str(first_exact) == glued("ds_gb_first_exact") == "5"
    first_2k = next(k for k in range(1, 7) if beam_2k(k) == [3, 5])
    assert str(first_2k) == glued("ds_gb_first_exact_2k") == "3" and beam_2k(2) == [1, 5]


def beam_2k(k):
    """Hugging Face / vLLM variant written independently: 2k candidates per beam, finished ones apart."""
    beams, done = [((0,), 0.0)], []
    for _ in range(MAX_LEN):
        cand = []
        for seq, s in beams:
            order = sorted((c for c in range(6) if P[seq[-1]][c] > 0), key=lambda c: (-P[seq[-1]][c], c))
            for c in order[:2 * k]:
                (done if c == EOS else cand).append((seq + (c,), s + lp(seq[-1], c)))
        beams = sorted(cand, key=lambda x: -x[1])[:k]
        if not beams:
            break
    return list(max(done + beams, key=lambda x: x[1])[0][1:])


def test_depth_first_with_the_bound_is_exact_and_small():
    tokens, prob, visited = bounded_dfs()
    assert tokens == [3, 5] and math.isclose(prob, 0.06)
    assert str(visited) == glued("ds_gb_dfs_nodes")
    bfs = 5 * (4**12 - 1) // 3  # 5 next tokens for every open prefix of 0 to 11 tokens
    assert f"{bfs:,}" == glued("ds_gb_bfs_nodes") and visited < bfs / 10**5
    frontier = 5 * 4**11  # depth 12 alone: 4 open continuations per level, 5 candidates at the last
    assert f"{frontier:,}" == glued("ds_gb_bfs_frontier") == "20,971,520" and frontier < bfs


def test_roofline_of_width_1_and_4():
    d, layers, kv_heads, head, ff, vocab = 4096, 32, 8, 128, 14336, 128_256
    per_layer = 2 * d * d + 2 * d * kv_heads * head + 3 * d * ff + 2 * d  # q, o, k, v, MLP, two norms
    params = layers * per_layer + 2 * vocab * d + d  # embedding, untied head, final norm
    assert params == 8_030_261_248
    weight_bytes, kv_token = 2 * params, 2 * layers * kv_heads * head * 2
    bw, rate = 3.35e12, 989e12
    times = {}
    for k in (1, 4):
        cached = k * 300
        nbytes = weight_bytes + kv_token * (cached + k)
        flops = 2 * (params - vocab * d) * k + cached * 2 * layers * 2 * 32 * head
        times[k] = max(nbytes / bw, flops / rate)
        assert nbytes / bw > flops / rate  # memory-bound at both widths
    assert (f"{times[1] * 1e3:.2f}", f"{times[4] * 1e3:.2f}", f"{times[4] / times[1]:.3f}") == \
        (glued("ds_gb_ms1"), glued("ds_gb_ms4"), glued("ds_gb_ratio"))
    out = chapter_outputs.printed(NB, "ds_gb_ratio")
    blocks4 = 200 // 16 + 4 * math.ceil((200 % 16 + 100) / 16)  # full prompt blocks once, the rest per beam
    assert blocks4 == 40 and f"cache {blocks4 * 16 * kv_token // 2**20} MiB" in out
    assert f"cache {math.ceil(300 / 16) * 16 * kv_token // 2**20} MiB" in out
    assert f"32 of {4 * vocab:,} logits" in out


def test_prose_links_and_cites():
    text = chapter_outputs.section(NB, LABEL, end="decoding_sampling-repetition-loops")
    assert text.startswith(f"({LABEL})=\n### ")
    chapter_outputs.assert_cited(text, ["yang2018beamcurse", "koehn2017six", "stahlberg2019catgot", "vllm033beamsearch",
                                        "meister2020bestfirst", "vllm033cacheconfig"])
    labels = chapter_outputs.book_labels()
    for ref in ("decoding_sampling-nondeterminism", "decoding_sampling-beam-search", "kv_cache_basics-beam-search",
                "deployment_plan-decode-floor", "decoding_sampling-diverse-contrastive"):
        assert f"{{ref}}`{ref}`" in text and ref in labels
    assert "In the interview" in text and ":class: dropdown followup" in text
    assert "vLLM 0.33.0" in text
    assert "times the throughput" not in text and "about a greedy request's" not in text  # review M1, M2
    assert "all `max_tokens`" in text and "request throughput by up to $k$" in text
