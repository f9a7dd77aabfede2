"""Claims of multi_tenant_serving's section on owned replicas under a daily curve, recomputed by hand."""
import math

import mha_kit as mk


def _band_utilisations(bands=8):
    # the chapter's assumed day in units of one replica: 5 - 3 cos(2 pi (h - 4) / 24), h = 0..23
    load = [5 - 3 * math.cos(2 * math.pi * (h - 4) / 24) for h in range(24)]
    return [sum(min(max(x - k, 0.0), 1.0) for x in load) / 24 for k in range(bands)]


def test_bottom_and_top_band():
    u = _band_utilisations()
    assert f"{u[0]:.0%}" == "100%"
    assert f"{u[-1]:.0%}" == "18%"
    kit = mk.stacked_replica_utilisation([5 - 3 * math.cos(2 * math.pi * (h - 4) / 24) for h in range(24)], 1.0, 8)
    assert max(abs(a - b) for a, b in zip(u, kit)) < 1e-12


def test_owned_counts_for_three_api_prices():
    plan = mk.largest_batch_within_tpot("llama-3-70b", "h100-sxm", tp=8, context_len=4096,
                                        tpot_target=mk.LATENCY_TARGETS["llama2-70b-interactive"].tpot_s)
    price = mk.DEEPSEEK_FLEET_DAY.price_per_gpu_hour
    c_full = 1e6 * price / (3600 * plan.tokens_per_s_per_gpu)  # dollars per million tokens at full use
    u = _band_utilisations()
    owned = {api: sum(1 for x in u if x > c_full / api) for api in (0.5, 1.0, 2.0)}
    assert owned == {0.5: 4, 1.0: 7, 2.0: 8}


def test_owned_capacity_at_half_the_floor_rate():
    # half-rate replicas: bands of half a floor replica, each at twice the price per token at full use
    plan = mk.largest_batch_within_tpot("llama-3-70b", "h100-sxm", tp=8, context_len=4096,
                                        tpot_target=mk.LATENCY_TARGETS["llama2-70b-interactive"].tpot_s)
    price = mk.DEEPSEEK_FLEET_DAY.price_per_gpu_hour
    c_half = 1e6 * price / (3600 * plan.tokens_per_s_per_gpu / 2)
    assert f"{c_half:.2f}" == "0.66"
    load = [5 - 3 * math.cos(2 * math.pi * (h - 4) / 24) for h in range(24)]  # floor replicas' worth
    u = [sum(min(max(x - k / 2, 0.0), 0.5) for x in load) / (24 * 0.5) for k in range(16)]
    owned = [sum(1 for x in u if x > c_half / api) for api in (0.5, 1.0, 2.0)]
    assert owned == [0, 7, 13]  # the chapter glues 0, 3.5, 6.5 floor replicas' worth
