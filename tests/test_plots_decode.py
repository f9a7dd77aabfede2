"""Figures of the decoding-cost and KV-cache chapters: what they draw, not how it looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots  # noqa: E402

LLAMA_70B = mk.PRESETS["llama-3-70b"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def bar_heights(ax):
    return [patch.get_height() for patch in ax.patches]


def test_decode_cost_bars_default_variants_are_mha_gqa_mqa():
    fig = plots.decode_cost_bars(LLAMA_70B, 8192)
    ax_macs, ax_bytes = fig.axes
    labels = [t.get_text() for t in ax_macs.get_xticklabels()]
    assert labels == ["MHA\nh_kv=64", "GQA\nh_kv=8", "MQA\nh_kv=1"]


def test_decode_cost_bars_arithmetic_is_flat():
    """Same multiply-adds in every variant: 134,217,728 for Llama 3 70B at 8,192 tokens."""
    ax_macs, _ = plots.decode_cost_bars(LLAMA_70B, 8192).axes
    assert bar_heights(ax_macs) == pytest.approx([134_217_728 / 1e6] * 3)
    assert [t.get_text() for t in ax_macs.texts] == ["134,217,728"] * 3


def test_decode_cost_bars_bytes_fall_on_a_log_axis():
    _, ax_bytes = plots.decode_cost_bars(LLAMA_70B, 8192).axes
    expected = [268_435_456, 33_554_432, 4_194_304]  # MHA, GQA-8, MQA, bf16
    assert bar_heights(ax_bytes) == pytest.approx([b / 2**20 for b in expected])
    assert ax_bytes.get_yscale() == "log"
    assert [t.get_text() for t in ax_bytes.texts] == ["256 MiB", "32 MiB", "4 MiB"]


@pytest.mark.parametrize("kv_head_counts", [
    (64, 16, 4),  # three GQA-like points
    (8,),  # a single bar
])
def test_decode_cost_bars_custom_head_counts(kv_head_counts):
    ax_macs, _ = plots.decode_cost_bars(LLAMA_70B, 1024, kv_head_counts).axes
    assert len(ax_macs.patches) == len(kv_head_counts)


def test_decode_cost_bars_axes_name_their_units():
    fig = plots.decode_cost_bars(LLAMA_70B, 8192, fmt="fp8")
    ax_macs, ax_bytes = fig.axes
    assert "multiply-adds" in ax_macs.get_ylabel()
    assert "MiB" in ax_bytes.get_ylabel() and "fp8" in ax_bytes.get_ylabel()


def test_decode_cost_bars_rejects_bad_head_counts():
    with pytest.raises(ValueError, match="divisible by num_kv_heads"):
        plots.decode_cost_bars(LLAMA_70B, 8192, kv_head_counts=(3,))


def test_cache_vs_context_one_line_per_config_in_gib():
    configs = [LLAMA_70B, LLAMA_70B.with_kv_heads(1), mk.PRESETS["deepseek-v2"]]
    contexts = [1024, 8192, 131072]
    fig = plots.cache_vs_context(configs, contexts)
    (ax,) = fig.axes
    assert len(ax.lines) == len(configs)
    for line, cfg in zip(ax.lines, configs):
        assert list(line.get_xdata()) == contexts
        assert list(line.get_ydata()) == pytest.approx([mk.kv_cache_bytes(cfg, s) / 2**30 for s in contexts])
    assert ax.lines[0].get_ydata()[1] == pytest.approx(2.5)  # 320 KiB x 8,192 tokens = 2.5 GiB
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert "GiB" in ax.get_ylabel() and "tokens" in ax.get_xlabel()


def test_cache_vs_context_same_variant_gets_same_colour_other_style():
    configs = [mk.PRESETS["llama-3-8b"], mk.PRESETS["mistral-7b"]]  # both GQA
    (ax,) = plots.cache_vs_context(configs, [4096]).axes
    assert ax.lines[0].get_color() == ax.lines[1].get_color() == plots.VARIANT_COLORS["gqa"]
    assert ax.lines[0].get_linestyle() != ax.lines[1].get_linestyle()


def test_cache_vs_context_batch_scales_linearly():
    (ax1,) = plots.cache_vs_context([LLAMA_70B], [8192]).axes
    (ax4,) = plots.cache_vs_context([LLAMA_70B], [8192], batch_size=4).axes
    assert ax4.lines[0].get_ydata()[0] == pytest.approx(4 * ax1.lines[0].get_ydata()[0])


@pytest.mark.parametrize("configs, contexts", [
    ([], [1024]),  # no config
    ([LLAMA_70B], []),  # no context length
])
def test_cache_vs_context_rejects_empty_inputs(configs, contexts):
    with pytest.raises(ValueError, match="at least one config and one context length"):
        plots.cache_vs_context(configs, contexts)
