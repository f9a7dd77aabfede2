"""Figures of the part "Serving in 2026": what they draw, not how it looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots_serving  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _step(prefill_tokens, decode_seqs, cached_tokens):
    return 0.010 + 1e-4 * prefill_tokens + 5e-5 * decode_seqs


# ---------------------------------------------------------------------------------------------
# Continuous batching
# ---------------------------------------------------------------------------------------------

def test_latency_by_policy_draws_the_summaries_in_ms():
    workload = [(0.0, 50, 20), (0.0, 60, 20), (0.1, 1000, 5)]
    results = {"static": mk.simulate_batching(workload, _step, 2048, chunked_prefill=False, policy="static"),
               "chunked": mk.simulate_batching(workload, _step, 256)}
    (ax,) = plots_serving.latency_by_policy(results).axes
    bars = [p for p in ax.patches]
    assert len(bars) == 6  # three metrics for each of two policies
    static, chunked = (mk.summarize_latencies(lats) for lats in results.values())
    heights = {(round(b.get_x() + b.get_width() / 2, 6)): b.get_height() for b in bars}
    width = 0.8 / 3
    assert heights[round(-width, 6)] == pytest.approx(1e3 * static.median_ttft)
    assert heights[round(1.0, 6)] == pytest.approx(1e3 * chunked.median_tpot)
    assert heights[round(1 + width, 6)] == pytest.approx(1e3 * chunked.worst_itl)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["static", "chunked"]
    assert ax.get_yscale() == "log" and "milliseconds" in ax.get_ylabel()


def test_batch_timeline_puts_each_step_on_the_rows_it_served():
    steps = mk.batching_steps([(0.0, 300, 3), (0.0, 20, 4)], _step, 128)
    (ax,) = plots_serving.batch_timeline(steps, ["long", "short"]).axes
    prefill, decode = ax.containers
    served = [(i, s) for s in steps for i, _ in s.prefill]
    drawn = [(p.get_y() + p.get_height() / 2, p.get_x(), p.get_width()) for p in prefill]
    np.testing.assert_allclose(drawn, [(i, 1e3 * s.start, 1e3 * s.seconds) for i, s in served])
    assert len(decode) == sum(len(s.decode) for s in steps) == (3 - 1) + (4 - 1)
    assert "ms" in ax.get_xlabel() and [t.get_text() for t in ax.get_yticklabels()] == ["long", "short"]


def test_batch_timeline_needs_a_label_per_request():
    steps = mk.batching_steps([(0.0, 10, 2), (0.0, 10, 2)], _step, 64)
    with pytest.raises(ValueError, match="a label for each of the 2 requests"):
        plots_serving.batch_timeline(steps, ["only one"])
    with pytest.raises(ValueError, match="at least one policy"):
        plots_serving.latency_by_policy({})


# ---------------------------------------------------------------------------------------------
# Speculative decoding
# ---------------------------------------------------------------------------------------------

def test_expected_tokens_vs_k_draws_equation_1_and_its_limits():
    ks = [0, 1, 2, 4, 8]
    (ax,) = plots_serving.expected_tokens_vs_k([0.6, 1.0], ks).axes
    curve_06, limit_06, curve_1 = ax.get_lines()
    assert list(curve_06.get_ydata()) == [mk.speculative_expected_tokens(0.6, k) for k in ks]
    assert limit_06.get_ydata()[0] == pytest.approx(2.5)  # 1 / (1 - 0.6)
    assert list(curve_1.get_ydata()) == [k + 1 for k in ks]  # alpha = 1 has no finite limit line
    assert "k" in ax.get_xlabel()


def test_verification_intensity_is_k_plus_1_times_decode_under_the_ridge():
    ks = [0, 3, 7]
    gpu = mk.GPUS["h100-sxm"]
    cfgs = [mk.PRESETS["llama-3-70b"], mk.PRESETS["deepseek-v2"]]
    (ax,) = plots_serving.verification_intensity(cfgs, ks, gpu).axes
    llama, deepseek, ridge = ax.get_lines()
    assert list(llama.get_ydata()) == [8.0 * (k + 1) for k in ks]  # 2 g / 2 bytes, g = 8
    np.testing.assert_allclose(deepseek.get_ydata(), [2176 / 9 * (k + 1) for k in ks])  # absorbed MLA
    assert ridge.get_ydata()[0] == pytest.approx(gpu.ridge_point)
    assert ax.get_yscale() == "log"


def test_hit_rate_vs_capacity_draws_block_then_radix():
    rates = {12_000: (0.25, 0.2), 4_000: (0.1, 0.05)}  # unsorted on purpose
    (ax,) = plots_serving.prefix_hit_rate_vs_capacity(rates, block_size=16).axes
    blocks, radix = ax.get_lines()
    np.testing.assert_allclose(blocks.get_xdata(), [4.0, 12.0])
    np.testing.assert_allclose(blocks.get_ydata(), [10.0, 25.0])
    np.testing.assert_allclose(radix.get_ydata(), [5.0, 20.0])
    assert "16" in blocks.get_label() and "vLLM" in blocks.get_label() and "SGLang" in radix.get_label()
    assert "%" in ax.get_ylabel()


def test_fp8_relative_step_stays_between_2_to_the_minus_m_and_half_of_it_in_the_normal_range():
    (ax,) = plots_serving.fp8_relative_step().axes
    e4m3, e5m2 = ax.get_lines()
    for line, step, smallest_normal, top in ((e4m3, 12.5, 2.0**-6, 448), (e5m2, 25.0, 2.0**-14, 57344)):
        x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert np.all(y[x >= smallest_normal] <= step) and np.all(y[x >= smallest_normal] >= step / 2)
        assert y[x < smallest_normal].max() == 100.0  # the smallest subnormal is twice its step away
        assert f"{top:,}" in line.get_label()


def test_kv_error_vs_bits_places_each_row():
    rows = [("int4, keys per channel", 4.5, 0.01), ("int4, keys per token", 4.25, 0.2)]
    (ax,) = plots_serving.kv_error_vs_bits(rows).axes
    points = [(line.get_xdata()[0], line.get_ydata()[0]) for line in ax.get_lines()]
    assert points == [(4.5, 1.0), (4.25, 20.0)]
    assert [t.get_text() for t in ax.texts] == [label for label, _, _ in rows]


def test_transfer_vs_prefill_draws_the_prefill_then_each_link():
    facts, gpu = mk.MODEL_FACTS["llama-3-70b"], mk.GPUS["h100-sxm"]
    links = [mk.LINKS["nvlink4"], mk.LINKS["ib-ndr"]]
    lengths = [1024, 8192]
    (ax,) = plots_serving.transfer_vs_prefill(facts, lengths, links, gpu).axes
    prefill, nvlink, ib = ax.get_lines()
    np.testing.assert_allclose(prefill.get_ydata(), [1e3 * mk.prefill_flops(facts, n) / 989e12 for n in lengths])
    np.testing.assert_allclose(ib.get_ydata(), [1e3 * n * 327_680 / 50e9 for n in lengths])
    np.testing.assert_allclose(nvlink.get_ydata(), [1e3 * n * 327_680 / 450e9 for n in lengths])
    assert ax.get_xscale() == ax.get_yscale() == "log" and "ms" in ax.get_ylabel()
