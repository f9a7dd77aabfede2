"""Figures of the sparse-pattern and state-space chapters: what each one draws (data), not looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots_sparse  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_mask_gallery_draws_each_mask_with_its_density():
    masks = {"causal": mk.causal_mask(8), "prefix-LM": mk.prefix_lm_mask(8, 4)}
    fig = plots_sparse.mask_gallery(masks, columns=3)
    drawn = [ax for ax in fig.axes if ax.images]
    assert len(drawn) == 2
    for ax, (name, mask) in zip(drawn, masks.items()):
        np.testing.assert_array_equal(ax.images[0].get_array(), mask)
        assert ax.get_title().startswith(name) and f"{mask.mean():.0%}" in ax.get_title()
        assert ax.get_xlabel() == "key position"


def test_bytes_vs_context_draws_mib():
    contexts = [4096, 32768]
    fig = plots_sparse.bytes_vs_context(contexts, {"kv": [2**20, 8 * 2**20], "state": [2**21, 2**21]}, "t")
    lines = fig.axes[0].get_lines()
    np.testing.assert_allclose(lines[0].get_ydata(), [1, 8])
    np.testing.assert_allclose(lines[1].get_ydata(), [2, 2])
    assert fig.axes[0].get_xscale() == "log" and "MiB" in fig.axes[0].get_ylabel()


@pytest.mark.parametrize("call, match", [
    (lambda: plots_sparse.mask_gallery({}), "at least one mask"),
    (lambda: plots_sparse.bytes_vs_context([1, 2], {}, "t"), "at least one curve"),
    (lambda: plots_sparse.bytes_vs_context([1, 2], {"a": [1]}, "t"), "has 1 values for 2 contexts"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
