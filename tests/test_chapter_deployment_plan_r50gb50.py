"""Section deployment_plan-gb200-moe-cost of "Plan a deployment": DeepSeek-V3/R1 on a GB200 NVL72 in dollars per
million tokens, and the attribution of the gain to each measured change.

Recomputed from the sources' own figures written out (DeepSeek's February 2025 day, SGLang's H100 and GB200 blogs,
the MLPerf v6.1 result summaries) and the price formula, not through the kit's functions.
"""
import re

import chapter_outputs

PRICE = 2.0  # dollars per GPU-hour: DeepSeek's assumption, the section's one input
H800_DEC, H800_PRE = 14_800 / 8, 73_700 / 8  # deepseekinfra2025: per 8-GPU node, day averages
H100_DEC, H100_PRE = 22_282 / 8, 54_543 / 8  # lmsyslargeep2025: per node, 2K inputs (decode EP72, prefill EP32)
GB_I = 7_583  # lmsysgb200part1: FP8 MoE, BF16 attention
GB_II_DEC, GB_II_PRE = 9_087, 18_471  # lmsysgb200part2: BF16 attention, FP8 MoE
GB_FP4_DEC, GB_FP4_PRE = 13_386, 26_156  # lmsysgb200part2: FP8 attention, NVFP4 MoE
MLPERF = {"offline": 523_790, "server": 395_940.14, "interactive": 240_273.74}  # tokens/s over 72 GPUs


def cost(rate, price=PRICE):
    return price * 1e6 / (3600 * rate)


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("deployment_plan"), key)


def test_costs_per_million():
    assert glued("gb_cost_ds") == f"{cost(H800_DEC):.3f}" == "0.300"  # the multi-tenant chapter's figure
    assert glued("gb_cost_h100") == f"{cost(H100_DEC):.3f}" == "0.199"  # SGLang's "about $0.20"
    assert glued("gb_cost_fp8") == f"{cost(GB_II_DEC):.3f}"
    assert glued("gb_cost_fp4") == f"{cost(GB_FP4_DEC):.3f}"
    assert cost(GB_FP4_DEC) < cost(GB_II_DEC) < cost(H100_DEC) < cost(H800_DEC)
    assert glued("gb_in_fp4") == f"{cost(GB_FP4_PRE):.3f}"
    assert glued("gb_breakeven_ds") == f"{PRICE * GB_FP4_DEC / H800_DEC:.1f}" == "14.5"
    assert glued("gb_breakeven_h100") == f"{PRICE * GB_FP4_DEC / H100_DEC:.1f}" == "9.6"
    # the like-for-like break-even is below the upper bound against DeepSeek's day average
    assert float(glued("gb_breakeven_h100")) < float(glued("gb_breakeven_ds"))


def test_deepseek_prefill_cache_hits():
    assert glued("gb_ds_hit") == "56.3%" and abs(342 / 608 - 0.563) < 1e-3  # deepseekinfra2025: 342B of 608B input tokens
    excl = 32_206 / 8  # lmsyslargeep2025: DeepSeek's prefill excluding cache hits, per node
    assert glued("gb_ds_excl") == f"{excl:,.0f}" == "4,026"
    assert glued("gb_ds_excl_cost") == f"{cost(excl):.3f}" == "0.138"
    assert cost(excl) > cost(H100_PRE) > cost(H800_PRE)  # computed prefill is dearer than the cache-hit average
    assert glued("gb_ds_kv") == "4,989"


def test_mlperf_rows():
    for name, rate in MLPERF.items():
        assert glued(f"gb_mlperf_{name}") == f"{rate / 72:,.0f}"
        assert glued(f"gb_mlperf_{name}_cost") == f"{cost(rate / 72):.3f}"
    assert MLPERF["interactive"] < MLPERF["server"] < MLPERF["offline"]  # the tighter the SLO, the fewer tokens
    assert glued("gb_breakeven_mlperf") == f"{PRICE * MLPERF['server'] / 72 / H800_DEC:.1f}" == "5.9"
    # the Interactive configs: 2 prefill instances of DEP4 and 4 decode instances of DEP16, MTP with 3 layers
    layout = [glued(f"gb_ml_{k}") for k in ("ctx_n", "ctx_ep", "gen_n", "gen_ep", "mtp")]
    assert layout == ["2", "4", "4", "16", "3"]
    assert (glued("gb_ml_ctx_gpus"), glued("gb_ml_gen_gpus")) == ("8", "64") and 2 * 4 + 4 * 16 == 72
    assert glued("gb_drill") == f"{cost(MLPERF['server'] / 72, 6.0):.3f}"
    # the samples average ~3,814 tokens in both latency-free and bounded runs: the generated answers, not prompts
    assert abs(MLPERF["server"] / 103.82 - MLPERF["offline"] / 137.323) < 5


def test_attribution_chain():
    hw, sw, fp4 = GB_I / H100_DEC, GB_II_DEC / GB_I, GB_FP4_DEC / GB_II_DEC
    assert (glued("gb_step_hw"), glued("gb_step_sw"), glued("gb_step_fp4")) == (
        f"{hw:.2f}", f"{sw:.2f}", f"{fp4:.2f}") == ("2.72", "1.20", "1.47")
    assert glued("gb_step_all") == f"{hw * sw * fp4:.2f}" == "4.81"  # SGLang's "4.8x"
    assert f"{GB_FP4_PRE / H100_PRE:.1f}" == "3.8"  # SGLang's "3.8x" prefill, from its own per-node figures
    assert glued("gb_pre_fp4") == f"{GB_FP4_PRE / GB_II_PRE:.2f}"
    assert glued("gb_over_ds") == f"{GB_FP4_DEC / H800_DEC:.1f}"
    # ratios quoted from the sources: NVIDIA Wide-EP (summary), SGLang H100 against TP16, EPLB ablation
    assert (glued("gb_q_wideep"), glued("gb_q_h100_dec_tp16"), glued("gb_q_h100_pre_tp16"), glued("gb_q_eplb_dec")) == (
        "1.8", "5.2", "3.3", "2.54")


def test_pd_sizing():
    p, d = 2000 / GB_FP4_PRE, 1000 / GB_FP4_DEC  # GPU-seconds a request in each pool
    assert glued("gb_pd_ratio") == f"{p / d:.2f}"
    assert glued("gb_both") == f"{PRICE * 1e6 / 3600 * (p + d) / 1000:.3f}"


def test_section_cites_and_links():
    nb = chapter_outputs.notebook("deployment_plan")
    text = chapter_outputs.section(nb, "deployment_plan-gb200-moe-cost", "deployment_plan-forecast")
    chapter_outputs.assert_cited(text, ["deepseekinfra2025", "lmsyslargeep2025", "lmsysgb200part1", "lmsysgb200part2",
                                        "mlperfgb200dsr1", "mlperfdsr1ref", "nvidiawideep", "dailydevwideep"])
    assert "nobody I know of" not in text and "not stated" not in text  # the review's M2 and M3
    assert "excl. cache hit" in text and "two-batch overlap" in text
    labels = chapter_outputs.book_labels()
    refs = re.findall(r"\{ref\}`([\w.-]+)`", text)
    assert refs and all(r in labels for r in refs)
    assert "multi_tenant_serving-deepseek-fleet" in refs and "moe_serving-nvl72" in refs
    assert "In the interview" in text and ":class: dropdown" in text
