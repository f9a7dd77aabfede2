"""Figures of the part "Long context, kernels and numerics": what each one draws (data), not looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots_context  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}


def test_rope_stretch_draws_one_line_per_method_at_the_pair_wavelengths():
    methods = {"linear": ({"type": "linear", "factor": 8.0}, {}), "llama3": (LLAMA31, {})}
    fig = plots_context.rope_stretch_by_wavelength(128, 500000.0, methods, trained_length=8192)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label() in methods]
    assert [line.get_label() for line in lines] == ["linear", "llama3"]
    wavelength = 2 * np.pi * 500000.0 ** (np.arange(64) / 64)  # 2 pi / base**(-2i/128)
    for line, (scaling, _) in zip(lines, methods.values()):
        np.testing.assert_allclose(line.get_xdata(), wavelength, rtol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), mk.stretch_per_pair(128, 500000.0, scaling), rtol=1e-12)
    np.testing.assert_allclose(lines[0].get_ydata(), 8.0)  # linear: every pair eight times slower
    assert ax.get_xscale() == "log" and "tokens" in ax.get_xlabel() and ax.get_ylabel()
    assert any(line.get_xdata()[0] == 8192 for line in ax.get_lines())  # the trained-context marker


def test_attention_mass_is_the_mean_over_queries():
    weights = mk.softmax(np.random.default_rng(0).standard_normal((2, 5, 6)))
    fig = plots_context.attention_mass_by_position({"toy": weights}, first=4)
    line = fig.axes[0].get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), weights.reshape(10, 6).mean(axis=0)[:4], rtol=1e-12)
    assert line.get_xdata().tolist() == [0, 1, 2, 3]
    assert "key position" in fig.axes[0].get_xlabel()


def test_cache_bytes_lines():
    cfg = mk.PRESETS["llama-3-8b"]
    generated = [1024, 8192, 65536]
    fig = plots_context.cache_bytes_vs_generated(cfg, generated, n_sink=4, window=4092)
    full, window, sink = fig.axes[0].get_lines()
    np.testing.assert_allclose(full.get_ydata(), [mk.kv_cache_bytes(cfg, t) / 2**30 for t in generated])
    flat = [mk.kv_cache_bytes(cfg, min(t, 4096)) / 2**30 for t in generated]
    np.testing.assert_allclose(window.get_ydata(), flat)
    np.testing.assert_allclose(sink.get_ydata(), flat)
    assert sink.get_label() == "sink cache, 4 + 4,092" and "GiB" in fig.axes[0].get_ylabel()


@pytest.mark.parametrize("call, message", [
    (lambda: plots_context.rope_stretch_by_wavelength(8, 1e4, {}), r"^expected at least one method to draw, got none$"),
    (lambda: plots_context.attention_mass_by_position({}), r"^expected at least one set of attention weights"),
    (lambda: plots_context.attention_mass_by_position({"flat": np.ones(3)}),
     r"^weights 'flat': expected shape \(\.\.\., n, s\), got \(3,\)$"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


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
