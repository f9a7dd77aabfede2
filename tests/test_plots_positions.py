"""Figures of the chapters on masks and positions: panels, labelled axes, what each draws."""
import matplotlib

matplotlib.use("Agg")  # no display in tests; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def test_mask_patterns_draws_each_mask():
    masks = {"causal": mk.causal_mask(4), "window 2": mk.sliding_window_mask(4, 2), "chunk": mk.causal_mask(2, 5)}
    fig = plots.mask_patterns(masks)
    assert isinstance(fig, Figure) and len(panels(fig)) == 3
    for ax, (title, mask) in zip(panels(fig), masks.items()):
        assert ax.get_title() == title and ax.get_xlabel() == "key position j"
        np.testing.assert_array_equal(ax.images[0].get_array(), mask.astype(float))
    assert panels(fig)[0].get_ylabel() == "query position i"
    assert [t.get_text() for t in panels(fig)[2].get_yticklabels()] == ["3", "4"]  # queries are the last positions


@pytest.mark.parametrize(
    "masks, message",
    [
        ({}, r"^expected at least one mask to draw, got none$"),
        ({"ints": np.ones((2, 2), dtype=int)}, r"^mask 'ints': expected a boolean \(n, s\) array, got int64 \(2, 2\)$"),
        ({"batch": np.ones((1, 2, 2), dtype=bool)}, r"^mask 'batch': expected a boolean \(n, s\) array, got bool \(1, 2, 2\)$"),
    ],
)
def test_mask_patterns_errors(masks, message):
    with pytest.raises(ValueError, match=message):
        plots.mask_patterns(masks)


def test_rope_score_maps_show_rope_and_added_sinusoids():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    fig = plots.rope_score_maps(q, k, 12)
    rope_ax, sin_ax = panels(fig)
    rope_map, sin_map = rope_ax.images[0].get_array(), sin_ax.images[0].get_array()
    np.testing.assert_allclose(rope_map, mk.rope_scores(q, k, np.arange(12), np.arange(12)))
    assert np.allclose(np.diagonal(rope_map), rope_map[0, 0])  # constant diagonal
    assert not np.allclose(np.diagonal(sin_map), sin_map[0, 0])  # added encodings are not
    assert rope_ax.get_xlabel() == "key position n" and rope_ax.get_ylabel() == "query position m"


def test_rope_score_vs_distance_lines_coincide():
    fig = plots.rope_score_vs_distance(16, 50, offsets=(0, 300))
    (ax,) = panels(fig)
    first, second = (line.get_ydata() for line in ax.get_lines())
    np.testing.assert_allclose(second, first, rtol=1e-8, atol=1e-8)
    assert first[0] == pytest.approx(16.0)  # q . q with q = ones(16) at distance 0
    assert ax.get_xlabel() == "distance m - n (tokens)"
