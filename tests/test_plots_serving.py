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
