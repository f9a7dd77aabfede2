"""Section serving_operations-latency-creep of "Serving in production": latency that rises over weeks, no deploy.

The queueing knee rho / (1 - rho) and the weeks of traffic growth, from the formula; the prefill floors, cache per
request and decode floors of a growing chat history, from Llama 3 8B's shape written out and the H100's datasheet
rates (not through mk.roofline_step or mk.prefill_seconds); the simulated replica's numbers against the chapter's
own sweep table; and the metric names, links and citations the playbook rests on.
"""
import math
import re

import pytest
import chapter_outputs

NB = chapter_outputs.notebook("serving_operations")
LABEL = "serving_operations-latency-creep"
TEXT = chapter_outputs.section(NB, LABEL, "serving_operations-kv-cost-diagnosis")

# Llama 3 8B (config.json): 32 layers, d 4096, 32 query and 8 KV heads of 128, d_ff 14336, vocabulary 128256
L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PROJ = D * H * HD + 2 * D * KV * HD + H * HD * D  # q, k, v, o
PARAMS = 2 * V * D + L * (PROJ + 3 * D * FF + 2 * D) + D  # embeddings, output head, layers, final norm
BW, PEAK = 3.35e12, 989e12  # H100 SXM: HBM bytes/s, dense bf16 FLOP/s (datasheet)
KV_TOKEN = 2 * L * KV * HD * 2  # K and V, every layer, bf16 bytes
OUT = 200  # the sweep's output tokens a request (the chapter's setup cell)


def glued(key):
    return chapter_outputs.glued(NB, key)


def wait(rho):  # M/M/1 mean time in queue, in mean service times
    return rho / (1 - rho)


def prefill_flops(cached, new):  # weights see the new tokens; new token i attends to cached + i keys
    return 2 * new * L * (PROJ + 3 * D * FF) + 2 * V * D + L * 4 * H * HD * (new * cached + new * (new + 1) // 2)


def decode_step(seqs, ctx):  # one step of `seqs` sequences with `ctx` cached tokens each
    nbytes = 2 * PARAMS + KV_TOKEN * (seqs * ctx + seqs)
    flops = 2 * (PARAMS - V * D) * seqs + 4 * H * HD * L * seqs * ctx
    return max(nbytes / BW, flops / PEAK)


def test_shape_constants():
    """A precondition, not a chapter test: the shape written out gives the published parameter count."""
    assert PARAMS == 8_030_261_248
    assert KV_TOKEN == 131_072


def test_queueing_knee():
    table = chapter_outputs.printed(NB, "so_lc_w95")
    for rho in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        assert re.search(rf"{rho:.0%}\s+{wait(rho):.2f}\n", table), rho
    assert glued("so_lc_w95") == f"{wait(0.95) / wait(0.5):.0f}" == "19"
    weeks = math.log(0.9 / 0.7) / math.log(1.03)
    assert glued("so_lc_weeks") == f"{weeks:.1f}" == "8.5"
    assert glued("so_lc_w7090") == f"{wait(0.9) / wait(0.7):.1f}" == "3.9"


def _sweep_rows():
    """{rate: (done/s, TTFT p50 s, TTFT p99 s, TPOT p50 s, TPOT p99 s, in system)} from the printed sweep table."""
    sweep = chapter_outputs.printed(NB, 'glue("so_cap"')
    rows = {}
    for r in (line.split() for line in sweep.splitlines()[1:]):
        if r:
            rows[int(r[0])] = (float(r[1]), float(r[2].removesuffix("s")), float(r[3].removesuffix("s")),
                               float(r[4].removesuffix("ms")) / 1e3, float(r[5].removesuffix("ms")) / 1e3, float(r[6]))
    return rows


def test_sweep_rows_obey_the_floor_and_littles_law():
    """Checks on the simulated replica that do not use the simulator: no TPOT beats a step that reads every weight
    once; no row serves more than it is offered; and the printed mean count in the system matches Little's law on
    the printed columns (completion rate x (TTFT + the other OUT - 1 tokens at the TPOT)): within 20% at the
    medians, which stand in for the means (TPOT is skewed: 15% off at 20/s), and below it at the p99s."""
    rows = _sweep_rows()
    assert sorted(rows) == [10, 15, 20, 25, 30, 35, 40, 50]
    floor = 2 * PARAMS / BW
    assert f"{1e3 * floor:.2f}" == "4.79"
    for rate, (done, ttft50, ttft99, tpot50, tpot99, in_system) in rows.items():
        assert tpot50 >= decode_step(1, 500) > floor, rate  # one sequence, the shortest prompt of the mix
        assert tpot99 >= tpot50 and ttft99 >= ttft50, rate
        assert done <= rate, rate
        little = done * (ttft50 + (OUT - 1) * tpot50)
        assert abs(little / in_system - 1) < 0.2, (rate, little, in_system)
        assert done * (ttft99 + (OUT - 1) * tpot99) > in_system, rate


def test_simulated_replica_matches_the_sweep_table():
    rows = _sweep_rows()
    assert glued("so_lc_tpot15") == f"{1e3 * rows[15][3]:.1f}"
    assert glued("so_lc_tpot25") == f"{1e3 * rows[25][3]:.1f}"
    assert glued("so_lc_ttft15") == f"{rows[15][2]:.2f}"
    assert glued("so_lc_ttft25") == f"{rows[25][2]:.2f}"
    assert glued("so_lc_ttft30") == f"{rows[30][2]:.2f}"
    # the order the section describes: TPOT moves first, the TTFT tail jumps near capacity
    assert float(glued("so_lc_tpot25")) > 2 * float(glued("so_lc_tpot15"))
    assert float(glued("so_lc_ttft30")) > 4 * float(glued("so_lc_ttft25"))


@pytest.mark.parametrize("hist, pre, kv, dec", [(1_000, "14.4", "0.13", "5.4"), (16_000, "293.7", "2.10", "14.8")])
def test_growing_history(hist, pre, kv, dec):
    assert f"{1e3 * prefill_flops(0, hist) / PEAK:.1f}" == pre == glued(f"so_lc_pre{hist // 1000}k")
    assert f"{KV_TOKEN * hist / 1e9:.2f}" == kv == glued(f"so_lc_kv{hist // 1000}k")
    assert f"{1e3 * decode_step(16, hist):.1f}" == dec == glued(f"so_lc_dec{hist // 1000}k")


def test_32_long_histories_do_not_fit():
    need = (32 * KV_TOKEN * 16_000 + 2 * PARAMS) / 1e9
    assert glued("so_lc_fit16k") == f"{need:.0f}" == "83"
    pool_sheet, pool_reported = 0.9 * 80e9 / 1e9, 0.9 * 81_559 * 2**20 / 1e9  # vLLM's default share; nvidia-smi's 81,559 MiB
    assert glued("so_lc_pool") == f"{pool_sheet:.0f}" == "72"
    assert glued("so_lc_poolrep") == f"{pool_reported:.0f}" == "77"
    assert need > pool_reported > pool_sheet
    assert "more than\nvLLM lets itself use" in TEXT and "the GPU's 80 GB" not in TEXT
    assert "{cite:p}`vllmmemoryprofile{vllm/config/cache.py}`" in TEXT


def test_prefill_grows_faster_than_history():
    ratio = prefill_flops(0, 16_000) / prefill_flops(0, 1_000)
    assert glued("so_lc_histx") == str(16_000 // 1_000)
    assert glued("so_lc_prex") == f"{ratio:.1f}" == "20.4"
    assert "more than in proportion" in TEXT and "a little more, for attention" not in TEXT


def test_revised_claims():
    assert "barely moves" not in TEXT and glued("so_lc_ttft15") == "0.24"
    assert "Traffic is flat through the day" in TEXT and "at equal request rates" in TEXT
    assert "Frontend Stats Collection}`" in TEXT and "tokens, not requests" in TEXT
    assert "rate(vllm:prefix_cache_hits_total[5m])" in TEXT and "{cite:p}`vllmpromloggers{" in TEXT
    assert "the API-server process only" in TEXT and "understates the bend" in TEXT


def test_prefix_hit_rate():
    hit90, hit50 = (prefill_flops(int(h * 8000), 8000 - int(h * 8000)) / PEAK for h in (0.9, 0.5))
    assert glued("so_lc_hit90") == f"{1e3 * hit90:.1f}" == "14.5"
    assert glued("so_lc_hit50") == f"{1e3 * hit50:.1f}" == "69.2"
    assert glued("so_lc_hitx") == f"{hit50 / hit90:.1f}"


def test_playbook_names_every_signal_and_source():
    for name in ("vllm:request_queue_time_seconds", "vllm:request_prompt_tokens", "vllm:kv_cache_usage_perc",
                 "vllm:num_preemptions_total", "vllm:prefix_cache_hits", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                 "process_resident_memory_bytes", "slow_callback_duration"):
        assert name in TEXT, name
    for key in ("vllmmetrics{docs/design/metrics.md", "dcgmfields", "pyasynciodebug{"):
        assert "{cite:p}`" + key in TEXT, key
    for ref in ("serving_operations-regression", "serving_operations-diagnose", "serving_operations-metrics",
                "serving_operations-tail-latency", "serving_reliability-overload", "serving_reliability-grey-failures",
                "prefix_caching-growing-conversation", "scheduler_design-preemption"):
        assert "{ref}`" + ref + "`" in TEXT, ref
    table = TEXT.split("| signal, plotted over the period |")[1].split("\n\n")[0]
    assert len([r for r in table.splitlines() if r.startswith("| ")]) == 6
    assert "```{admonition} In the interview" in TEXT
    assert TEXT.count(":class: dropdown followup") == 1
