"""Figures of the part "Serving at scale": what they draw, not how it looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots_scale  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _plans(batches, context_len=8192):
    return [mk.plan_deployment("llama-3-70b", "h100-sxm", num_gpus=8, tp=8, context_len=context_len, batch_size=b)
            for b in batches]


def test_tpot_and_throughput_lines_hold_the_plans_values():
    plans = _plans([1, 8, 64])
    fig = plots_scale.tpot_and_throughput_vs_batch(plans)
    left, right = fig.axes
    (tpot,), (rate,) = left.get_lines(), right.get_lines()
    assert list(tpot.get_xdata()) == [1, 8, 64]
    assert list(tpot.get_ydata()) == [1e3 * p.tpot_s for p in plans]
    assert list(rate.get_ydata()) == [p.tokens_per_s_per_gpu for p in plans]
    assert "ms" in left.get_ylabel() and "tokens/s" in right.get_ylabel()
    assert "floor" in left.get_ylabel() and "ceiling" in right.get_ylabel()  # a rate from a time floor bounds it above


def test_plans_that_do_not_fit_are_left_out():
    plans = _plans([1, 8, 64, 512])  # 512 sequences of 8K do not fit beside the weights
    fig = plots_scale.tpot_and_throughput_vs_batch(plans)
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == [1, 8, 64]


def test_nothing_fits_is_an_error():
    with pytest.raises(ValueError, match="no plan fits"):
        plots_scale.tpot_and_throughput_vs_batch(_plans([512]))
