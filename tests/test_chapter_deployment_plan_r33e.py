"""Section deployment_plan-cpu-gpu-pools of "Plan a deployment": the CPU pool sized for a GPU pool's request rate.

Recomputed from the section's stated assumptions (core-milliseconds per stage, 300 requests/s, a 70% CPU
target, GPUs planned 85% busy) with the M/M/c wait written out from Erlang's formula with factorials, not
through mk.mmc_wait; then compared with the printed table and the glued values.
"""
import math

import chapter_outputs

RATE, TARGET, GPU_PLANNED = 300.0, 0.7, 0.85
STAGES_MS = [0.5, 1.5, 0.3 * 20, 2 * 5, 150 * 0.02]  # auth, tokenize, image share, safety in+out, detokenize
CPU_S = math.fsum(STAGES_MS) / 1000
NB = chapter_outputs.notebook("deployment_plan")
TABLE = chapter_outputs.printed(NB, "CPU_GPU_RATE = 300.0")


def mmc_wait_s(servers, load, service_s):
    """Mean M/M/c queueing time: Erlang C / (c mu - lambda), with a = c rho offered load."""
    a = servers * load
    top = a ** servers / math.factorial(servers) / (1 - load)
    p_wait = top / (sum(a ** k / math.factorial(k) for k in range(servers)) + top)
    return p_wait * service_s / (servers * (1 - load))


def row(name):
    return next(line.split() for line in TABLE.splitlines() if line.startswith(name))


def test_core_seconds_and_busy_cores():
    assert f"{1e3 * CPU_S:.0f}" == "21" == chapter_outputs.glued(NB, "dp_cpu_ms")
    assert f"{RATE * CPU_S:.1f}" == "6.3" == chapter_outputs.glued(NB, "dp_cpu_busy")
    assert "21.0 core-ms; x 300 requests/s = 6.3 busy cores" in TABLE


def test_pool_at_the_target_is_nine_cores():
    cores = math.ceil(round(RATE * CPU_S / TARGET, 6))  # 6.3 / 0.7 = 9 exactly on paper
    assert cores == 9 == int(chapter_outputs.glued(NB, "dp_cpu_cores"))
    sized = row("sized at 70%")
    assert sized[3:6] == ["9", "70%", "300"]
    assert sized[-3] == f"{1e3 * mmc_wait_s(9, RATE * CPU_S / 9, CPU_S):.1f}"


def test_just_enough_pool_queues_but_keeps_up():
    just = row("just enough")
    assert just[2:4] == ["7", "90%"]
    assert just[-3] == f"{1e3 * mmc_wait_s(7, RATE * CPU_S / 7, CPU_S):.1f}"


def test_thirty_percent_short_caps_the_gpu_rate():
    cores = math.floor(0.7 * RATE * CPU_S)  # 4.41 -> 4 cores
    served = cores / CPU_S  # requests/s the CPU pool can pass to the GPUs
    assert cores == 4 == int(chapter_outputs.glued(NB, "dp_cpu_short_cores"))
    assert f"{served:.0f}" == "190" == chapter_outputs.glued(NB, "dp_cpu_short_rate")
    assert f"{GPU_PLANNED * served / RATE:.0%}" == "54%" == chapter_outputs.glued(NB, "dp_cpu_short_gpu")
    assert f"{60 * (RATE - served):,.0f}" == "6,571" == chapter_outputs.glued(NB, "dp_cpu_short_backlog")
    short = row("4 cores, ")
    assert short[:4] == ["4", "cores,", f"{1 - cores / (RATE * CPU_S):.0%}", "short"] and short[2] == "37%"
    assert "unbounded" in short
    assert chapter_outputs.glued(NB, "dp_cpu_short_pct") == "37%"
    # the general rule: GPU busy = planned busy x CPU cores / busy cores, here 0.85 x 4 / 6.3
    assert f"{GPU_PLANNED * cores / (RATE * CPU_S):.0%}" == "54%"


def test_safety_classifier_is_almost_half_the_cpu_budget():
    assert f"{10.0 / math.fsum(STAGES_MS):.0%}" == "48%" == chapter_outputs.glued(NB, "dp_cpu_safety_share")


def test_image_tensor_hand_off_bandwidth():
    mb_s = RATE * 0.3 * (3 << 20) * 2 / 1e6  # 90 image requests/s x one 3x1024x1024 FP16 tensor
    assert f"{mb_s:,.0f}" == "566" == chapter_outputs.glued(NB, "dp_cpu_image_mb_s")


def test_image_share_of_cpu_work():
    assert f"{6.0 / 21.0:.0%}" == "29%" == chapter_outputs.glued(NB, "dp_cpu_image_share")


def test_section_cites_ray_serve_and_links_the_front_end_split():
    text = chapter_outputs.section(NB, "deployment_plan-cpu-gpu-pools", end="deployment_plan-parallel-search")
    assert "30% short" not in text and "a third of the CPU budget" not in text
    for needle in ("rayserveresources{", "rayserveconfig{", "{ref}`serving_operations-engine-core-process`",
                   "--api-server-count", "{ref}`serving_reliability-query-of-death`",
                   "vllmperf060{", "rayserveadvautoscale{", "target_ongoing_requests", "warm nodes"):
        assert needle in text
