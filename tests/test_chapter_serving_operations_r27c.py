"""Section serving_operations-tool-time: an agent task's wall time split into engine, tool and orchestration-gap time.

Recomputed with the section's assumptions written out (2,000 tasks of 8 steps; a 2,000-token start; 150 output
tokens a call at a 30 ms TPOT; prefill at 10,000 tokens/s of the whole prompt; 20 ms of orchestration a step;
the same seeded draws) but walked task by task and step by step in plain Python, instead of the chapter's
array sums, and the percentile bands taken from a sorted list.
"""
import numpy as np
import pytest

import chapter_outputs

N, S, START, OUT, PREFILL, TPOT, GAP = 2_000, 8, 2_000, 150, 10_000, 0.030, 0.020
NB = chapter_outputs.notebook("serving_operations")
MARK = "result_tok = rng.lognormal"


def simulate():
    rng = np.random.default_rng(27)
    result_tok = rng.lognormal(np.log(600), 0.8, (N, S)).astype(int).tolist()
    tool_s = rng.lognormal(np.log(0.5), 1.2, (N, S)).tolist()
    queue_s = rng.exponential(0.050, (N, S)).tolist()
    tasks, first, last, prefilled = [], [], [], []
    for t in range(N):
        no_cache = new = 0  # tokens prefilled with no prefix cache; tokens not seen by the previous call
        tokens, spent = START, dict.fromkeys(("queue", "prefill", "decode", "tool", "gap"), 0.0)
        for k in range(S):
            ttft = queue_s[t][k] + tokens / PREFILL
            if k == 0:
                first.append((tokens, ttft))
            if k == S - 1:
                last.append((tokens, ttft))
            spent["queue"] += queue_s[t][k]
            spent["prefill"] += tokens / PREFILL
            no_cache += tokens
            new += START if k == 0 else OUT + result_tok[t][k - 1]
            spent["decode"] += OUT * TPOT
            spent["tool"] += tool_s[t][k]
            spent["gap"] += GAP
            tokens += OUT + result_tok[t][k]  # the answer and the tool's result join the next prompt
        tasks.append(spent)
        prefilled.append((no_cache, new))
    return tasks, first, last, prefilled


TASKS, FIRST, LAST, PREFILLED = simulate()
WALL = [sum(s.values()) for s in TASKS]


def band_shares(lo, hi):
    order = sorted(range(N), key=WALL.__getitem__)[lo:hi]
    total = sum(WALL[i] for i in order)
    return {k: sum(TASKS[i][k] for i in order) / total for k in TASKS[0]}, total / len(order)


def test_wall_percentiles():
    p50, p99 = np.percentile(WALL, 50), np.percentile(WALL, 99)
    assert f"task wall time: p50 {p50:.1f} s, p99 {p99:.1f} s" in chapter_outputs.printed(NB, MARK)
    assert chapter_outputs.glued(NB, "so27t_p50") == f"{p50:.0f}"
    assert chapter_outputs.glued(NB, "so27t_p99") == f"{p99:.0f}"


@pytest.mark.parametrize("band, lo, hi, key", [("p45-p55", 900, 1100, "50"), ("top 1%", 1980, 2000, "99")])
def test_attribution_rows(band, lo, hi, key):
    shares, mean_wall = band_shares(lo, hi)
    row = next(line for line in chapter_outputs.printed(NB, MARK).splitlines() if line.startswith(band))
    engine = shares["queue"] + shares["prefill"] + shares["decode"]
    expected = [f"{mean_wall:.1f}"] + [f"{v:.0%}" for v in shares.values()] + [f"{engine:.0%}", f"{1 - engine:.0%}"]
    assert row[len(band):].split() == expected
    assert chapter_outputs.glued(NB, f"so27t_tool{key}") == f"{shares['tool']:.0%}"
    assert chapter_outputs.glued(NB, f"so27t_dec{key}") == f"{shares['decode']:.0%}"
    assert chapter_outputs.glued(NB, f"so27t_pre{key}") == f"{shares['prefill']:.0%}"


def test_tool_share_rises_in_the_tail():
    def share(key):  # the chapter's glued share, "15%" -> 0.15
        return int(chapter_outputs.glued(NB, key).rstrip("%")) / 100

    assert share("so27t_tool99") > 2 * share("so27t_tool50")
    assert share("so27t_dec99") < share("so27t_dec50")  # the same TPOT in every call: the engine is not the tail


def test_ttft_grows_with_the_prompt():
    t1 = sum(t for _, t in FIRST) / N
    t8 = sum(t for _, t in LAST) / N
    n8 = sum(n for n, _ in LAST) / N
    assert all(n == START for n, _ in FIRST)
    line = (f"call 1: {START:,} input tokens, TTFT {1e3 * t1:.0f} ms; call {S}: {n8:,.0f} tokens,"
            f" TTFT {1e3 * t8:.0f} ms (means)")
    assert line in chapter_outputs.printed(NB, MARK)
    assert chapter_outputs.glued(NB, "so27t_ttft1") == f"{1e3 * t1:.0f}"
    assert chapter_outputs.glued(NB, "so27t_ttftS") == f"{1e3 * t8:.0f}"
    assert chapter_outputs.glued(NB, "so27t_inS") == f"{n8:,.0f}"


def test_prefix_cache_turns_quadratic_prefill_linear():
    no_cache = sum(a for a, _ in PREFILLED) / N
    cached = sum(b for _, b in PREFILLED) / N
    assert cached == sum(n for n, _ in LAST) / N  # with a cache, a task prefills its last prompt once, in pieces
    line = (f"prefill tokens a task: {no_cache:,.0f} without a prefix cache, {cached:,.0f} with a perfect one"
            f" ({no_cache / cached:.1f}x)")
    assert line in chapter_outputs.printed(NB, MARK)
    assert chapter_outputs.glued(NB, "so27t_pfxno") == f"{no_cache:,.0f}"
    assert chapter_outputs.glued(NB, "so27t_pfxyes") == f"{cached:,.0f}"
    assert chapter_outputs.glued(NB, "so27t_pfxx") == f"{no_cache / cached:.1f}"
    assert no_cache / cached > S / 2  # quadratic against linear in the number of steps


def test_section_cites_the_tool_span():
    text = chapter_outputs.section(NB, "serving_operations-tool-time", "serving_operations-safetensors")
    assert "execute_tool {gen_ai.tool.name}" in text and "otelgenaispans{Execute tool span}" in text
    assert "gen_ai.execute_tool.duration" in text and "commit 01d9450" in text
    assert "vllmblockpoolusage{" in text and "KV usage that climbs as tool latency grows" not in text
