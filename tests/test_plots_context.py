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
