"""Figures of the chapter "Position encodings, the whole family": what they draw (data), not looks."""
import matplotlib

matplotlib.use("Agg")  # no display in tests; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402
from mha_kit import plots_family  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_stretch_by_pair_draws_the_given_factors():
    phi = mk.PHI35_MINI_LONGROPE
    theta, _ = mk.rope_inv_freq(phi.head_dim, phi.rope_theta)
    wavelength = 2 * np.pi / theta
    stretches = {"LongRoPE long": np.array(phi.long_factor), "PI": np.full(48, 32.0)}
    fig = plots_family.stretch_by_pair(wavelength, stretches, trained_length=4096)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label() in stretches]
    assert [line.get_label() for line in lines] == list(stretches)
    for line, stretch in zip(lines, stretches.values()):
        np.testing.assert_allclose(line.get_xdata(), wavelength, rtol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), stretch, rtol=1e-12)
    assert any(line.get_xdata()[0] == 4096 for line in ax.get_lines())  # the trained-context marker
    assert ax.get_xscale() == "log" and "tokens" in ax.get_xlabel()


def test_stretch_by_pair_errors():
    with pytest.raises(ValueError, match="at least one"):
        plots_family.stretch_by_pair(np.ones(3), {})
    with pytest.raises(ValueError, match="expected 3 slow-downs"):
        plots_family.stretch_by_pair(np.ones(3), {"x": np.ones(2)})
