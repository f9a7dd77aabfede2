"""Figures of the part "Long context, kernels and numerics": what they draw, not how it looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots_context  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_split_occupancy_draws_the_wave_efficiency_of_each_batch():
    splits = [1, 2, 4, 8, 16, 32]
    (ax,) = plots_context.split_occupancy(8, [1, 64], splits, num_sms=132).axes
    batch1, batch64 = ax.get_lines()
    assert list(batch1.get_xdata()) == splits
    assert list(batch1.get_ydata()) == [100 * 8 * k / 132 for k in (1, 2, 4, 8, 16)] + [100 * 256 / 264]
    assert batch64.get_ydata()[0] == 100 * 512 / (4 * 132)  # 512 tiles in 4 waves of 132
    assert "%" in ax.get_ylabel() and ax.get_xscale() == "log"


def test_causal_tile_map_has_the_counts_of_causal_tiles():
    (ax, *_) = plots_context.causal_tile_map(64, 16, 8).axes
    kinds = ax.get_images()[0].get_array()
    counts = mk.causal_tiles(64, 16, 8)
    assert kinds.shape == (4, 8)
    assert ((kinds == 2).sum(), (kinds == 1).sum(), (kinds == 0).sum()) == (counts.full, counts.masked, counts.skipped)


def test_soft_cap_curves():
    fig = plots_context.soft_cap_curves({"attention (50)": 50.0, "final (30)": 30.0}, x_max=100.0)
    ax_value, ax_grad = fig.axes
    identity, attention, final = ax_value.get_lines()
    x = attention.get_xdata()
    np.testing.assert_array_equal(identity.get_ydata(), x)
    np.testing.assert_allclose(final.get_ydata(), mk.soft_cap(x, 30.0))
    np.testing.assert_allclose(ax_grad.get_lines()[0].get_ydata(), mk.soft_cap_grad(x, 50.0))
    assert x[-1] == 100.0


def test_cache_growth_lines():
    cfg, layout = mk.MODEL_FACTS["gemma-2-9b"].config, mk.LAYER_LAYOUTS["gemma-3"]
    contexts = [1024, 8192, 131072]
    (ax,) = plots_context.cache_growth(cfg, contexts, layout, attention_every=4).axes
    full, interleaved, hybrid, linear = ax.get_lines()
    gib = 2**30
    assert list(full.get_ydata()) == [mk.kv_cache_bytes(cfg, s) / gib for s in contexts]
    assert list(interleaved.get_ydata()) == [mk.layout_kv_bytes(cfg, s, layout) / gib for s in contexts]
    assert list(hybrid.get_ydata()) == [mk.hybrid_cache_bytes(cfg, s, 4) / gib for s in contexts]
    assert len(set(linear.get_ydata())) == 1  # the state does not grow
    assert "GiB" in ax.get_ylabel() and "tokens" in ax.get_xlabel()
