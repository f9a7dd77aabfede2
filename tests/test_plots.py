"""Figures of mha_kit.plots: return type, panels or frames, labelled axes, errors on bad input."""
import matplotlib

matplotlib.use("Agg")  # no display in tests; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.animation import FuncAnimation  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    """Close every pyplot figure a test opened."""
    yield
    plt.close("all")


@pytest.fixture
def toy():
    """The book's running example: x (3, 4), weights, cfg d=4 h=2."""
    return mk.toy_example()


def panels(fig):
    """The plotting axes of a figure, without colorbars."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def random_weights(h, n, s, seed=0):
    """Softmax weights of shape (h, n, s) from a seeded generator."""
    return mk.softmax(np.random.default_rng(seed).standard_normal((h, n, s)))


# --- head_weights_heatmaps ---

@pytest.mark.parametrize("h, n", [
    (1, 3),  # a single head
    (2, 3),  # the toy example's shape
    (4, 5),  # more heads and tokens
])
def test_head_weights_heatmaps_one_labelled_panel_per_head(h, n):
    fig = plots.head_weights_heatmaps(random_weights(h, n, n))
    assert isinstance(fig, Figure)
    assert len(panels(fig)) == h
    assert [ax.get_title() for ax in panels(fig)] == [f"head {i}" for i in range(h)]
    assert all(ax.get_xlabel() for ax in panels(fig))
    assert panels(fig)[0].get_ylabel()
    (colorbar,) = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert "0 to 1" in colorbar.get_ylabel()  # the unit of a weight


def test_head_weights_heatmaps_uses_token_labels(toy):
    x, weights, cfg = toy
    _, attn = mk.multi_head_attention(x, *weights, cfg.num_heads)
    fig = plots.head_weights_heatmaps(attn, tokens=["the", "cat", "sat"])
    assert [t.get_text() for t in panels(fig)[1].get_xticklabels()] == ["the", "cat", "sat"]


def test_head_weights_heatmaps_queries_are_the_last_tokens():
    # 2 queries over 4 keys (decoding with a cache): rows are tokens 2 and 3 (0-based)
    fig = plots.head_weights_heatmaps(random_weights(2, 2, 4))
    assert [t.get_text() for t in panels(fig)[0].get_yticklabels()] == ["token 2", "token 3"]


@pytest.mark.parametrize("weights, message", [
    (np.full((3, 3), 1 / 3), r"shape \(h, n, s\)"),  # heads axis missing
    (np.ones((2, 3, 3)), "summing to one"),  # scores, not softmax weights
    (-random_weights(2, 3, 3), "non-negative"),  # negative entries
    (np.ones((2, 0, 3)), r"shape \(h, n, s\)"),  # no queries
])
def test_head_weights_heatmaps_rejects_bad_weights(weights, message):
    with pytest.raises(ValueError, match=message):
        plots.head_weights_heatmaps(weights)


def test_head_weights_heatmaps_rejects_wrong_token_count():
    with pytest.raises(ValueError, match="expected 3 token labels.*got 2"):
        plots.head_weights_heatmaps(random_weights(2, 3, 3), tokens=["a", "b"])


# --- step_through_panels, step_through_animation, step_titles ---

def test_step_titles_carry_the_toy_numbers(toy):
    titles = plots.step_titles(*toy)
    assert [t.split(":")[0] for t in titles] == [f"Step {k} of 5" for k in range(1, 6)]
    assert "Q, K, V (3, 4)" in titles[0]
    assert "64 parameters for h = 1 and for h = 2" in titles[3]
    assert "concat (3, 4)" in titles[4] and "output (3, 4)" in titles[4]


def test_step_through_panels_five_labelled_panels(toy):
    fig = plots.step_through_panels(*toy)
    assert isinstance(fig, Figure)
    axes = panels(fig)
    assert len(axes) == 5
    assert [ax.get_title(loc="left").split(":")[0] for ax in axes] == [f"Step {k} of 5" for k in range(1, 6)]
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in axes)
    assert axes[3].get_ylabel() == "parameters (count)"  # the one numeric axis has its unit


def test_step_through_animation_renders_five_frames(toy):
    anim = plots.step_through_animation(*toy)
    assert isinstance(anim, FuncAnimation)
    html = anim.to_jshtml(default_mode="once")  # renders every frame, as the book does
    assert html.count("data:image/png;base64,") == 5
    assert len(html) < 1_000_000  # small enough to embed in a page
    assert 'title="Next frame"' in html  # the step button readers click
    (ax,) = anim._fig.axes
    assert ax.get_title(loc="left").startswith("Step 5 of 5: Join")  # the last frame drawn
    assert ax.get_xlabel() and ax.get_ylabel()


def test_step_through_animation_is_not_registered_with_pyplot(toy):
    before = plt.get_fignums()
    anim = plots.step_through_animation(*toy)
    anim.to_jshtml()  # render, so the animation is not deleted unused (a warning)
    assert plt.get_fignums() == before  # a notebook shows the widget only, no stray still


@pytest.mark.parametrize("make", [plots.step_through_panels, plots.step_through_animation, plots.step_titles])
@pytest.mark.parametrize("change, message", [
    (lambda x, w, cfg: (x[:, :3], w, cfg), r"expected x of shape \(n, 4\)"),  # width 3 for d=4
    (lambda x, w, cfg: (x[0], w, cfg), r"expected x of shape \(n, 4\)"),  # one token without its axis
    (lambda x, w, cfg: (np.zeros((9, 4)), w, cfg), "at most 8 tokens"),  # too many numbers to write
    (lambda x, w, cfg: (x, w, cfg.with_kv_heads(1)), "num_kv_heads == num_heads"),  # MQA, not MHA
    (lambda x, w, cfg: (x, mk.init_weights(mk.AttentionConfig(4, 2, head_dim=3)), cfg),
     "of shapes"),  # head size 3, not 2
    (lambda x, w, cfg: (x, mk.init_weights(mk.AttentionConfig(8, 2)), cfg), "of shapes"),  # weights for d=8
])
def test_step_through_rejects_bad_input(toy, make, change, message):
    with pytest.raises(ValueError, match=message):
        make(*change(*toy))
