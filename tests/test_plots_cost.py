"""Figures of the chapter "What attention costs": what they draw, not how it looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots  # noqa: E402

LLAMA = mk.MODEL_FACTS["llama-3-70b"]
LENGTHS = [128, 1024, 8192, 65536]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_cost_vs_length_draws_the_counts_and_the_crossovers():
    (ax,) = plots.cost_vs_length(LLAMA.config, LENGTHS, LLAMA.intermediate_size).axes
    projections, attention, _, ffn, _ = ax.get_lines()
    assert list(projections.get_ydata()) == [150_994_944 * n for n in LENGTHS]
    assert list(attention.get_ydata()) == [2 * 64 * n * n * 128 for n in LENGTHS]
    assert list(ffn.get_ydata()) == [3 * n * 8192 * 28672 for n in LENGTHS]
    verticals = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert verticals == [9216, 52224]
    assert ax.get_xscale() == ax.get_yscale() == "log" and "tokens" in ax.get_xlabel()


def test_cost_vs_length_without_feed_forward():
    (ax,) = plots.cost_vs_length(LLAMA.config, LENGTHS).axes
    assert len(ax.get_lines()) == 3  # projections, attention, one crossover line


def test_roofline_points_sit_at_the_layer_intensity():
    gpu = mk.GPUS["h100-sxm"]
    points = {"prefill": (LLAMA.config, 8192, 8192, 1), "decode": (LLAMA.config, 1, 8192, 1)}
    (ax,) = plots.roofline_points(gpu, points).axes
    roof, ridge, prefill, decode = ax.get_lines()
    assert ridge.get_xdata()[0] == pytest.approx(989 / 3.35)
    assert prefill.get_xdata()[0] == mk.layer_intensity(LLAMA.config, 8192, 8192)
    assert prefill.get_ydata()[0] == pytest.approx(989)  # on the flat roof: compute-bound
    assert decode.get_ydata()[0] == pytest.approx(mk.layer_intensity(LLAMA.config, 1, 8192) * 3.35)  # on the slope
    assert [t.get_text() for t in ax.texts][1:] == ["prefill", "decode"]


def test_io_vs_sram_draws_both_algorithms_in_mib():
    sizes = [512, 4096, 98_304]
    (ax,) = plots.io_vs_sram(8192, 128, sizes, marks={"A100": 98_304}).axes
    standard, flash, bound, mark = ax.get_lines()
    assert np.allclose(standard.get_ydata(), (4 * 8192 * 128 + 4 * 8192**2) * 2 / 2**20)
    assert list(flash.get_ydata()) == [mk.flash_attention_io(8192, 128, m) * 2 / 2**20 for m in sizes]
    assert list(bound.get_ydata()) == [12 * 8192**2 * 128**2 // m * 2 / 2**20 for m in sizes]
    assert mark.get_xdata()[0] == 98_304 and "MiB" in ax.get_ylabel()
