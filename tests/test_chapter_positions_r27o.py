"""positions-curse-premise: distance concentration (Beyer et al. 1999, Abstract) and the near-orthogonality of
random directions, recomputed pair by pair with math.dist and the exact law of |cos| for isotropic vectors, against the
chapter's stored outputs."""
import json
import itertools
import math
import pathlib

import numpy as np
import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "positions.ipynb"
WIDTHS = (2, 16, 128, 1024)


def _stored_rows(marker):
    """{d: [numbers]} from the stdout of the cell whose source contains ``marker``."""
    cell = next(c for c in json.loads(NB.read_text())["cells"] if marker in "".join(c["source"]))
    text = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            rows[int(parts[0])] = [float(p) for p in parts[1:]]
    return rows, text


def _distances():
    rng = np.random.default_rng(0)  # the chapter's seed and draw order: one (100, d) block per width
    out = {}
    for d in WIDTHS:
        pts = rng.random((100, d)).tolist()
        out[d] = np.array([math.dist(a, b) for a, b in itertools.combinations(pts, 2)])
    return out


def _exact_mean_abs_cos(d):
    # |cos| of two independent isotropic vectors in R^d: E|cos| = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2))
    return math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)


def test_distance_table_matches_pairwise_math_dist():
    rows, _ = _stored_rows("dists.max() / dists.min()")
    assert sorted(rows) == list(WIDTHS)
    for d, dist in _distances().items():
        assert dist.size == 4950  # 100 choose 2 pairs
        want = [dist.min(), dist.max(), dist.max() / dist.min()]
        assert rows[d][:3] == [float(f"{v:.3g}") for v in want], d
        assert rows[d][3] == round(0.1 ** (1 / d), 3)  # edge of a sub-cube holding 10% of [0, 1]^d


def test_nearest_and_farthest_converge():
    rows, _ = _stored_rows("dists.max() / dists.min()")
    ratios = [rows[d][2] for d in WIDTHS]  # the chapter's printed max/min ratio at each width
    assert all(a > b for a, b in zip(ratios, ratios[1:]))  # shrinks with every width
    assert ratios[0] > 100 and ratios[-1] < 1.2


@pytest.mark.parametrize("d", WIDTHS)
def test_mean_abs_cos_follows_the_exact_law(d):
    rows, _ = _stored_rows("sqrt(d) x mean |cos|")
    mean_abs_cos, scaled = rows[d]
    exact = _exact_mean_abs_cos(d)
    # 10,000 pairs: the standard error of the mean of |cos| is below sqrt(E[cos^2] / 1e4) = 0.01 / sqrt(d)
    assert abs(mean_abs_cos - exact) < 4 * 0.01 / math.sqrt(d) + 0.0005 * exact + 0.001
    assert abs(scaled - math.sqrt(d) * exact) < 0.02


def test_limit_is_sqrt_two_over_pi():
    assert _exact_mean_abs_cos(2) == pytest.approx(2 / math.pi)  # uniform angle in the plane
    assert math.sqrt(1024) * _exact_mean_abs_cos(1024) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-3)
    _, text = _stored_rows("sqrt(d) x mean |cos|")
    assert f"sqrt(2/pi) = {math.sqrt(2 / math.pi):.3g}" in text


def test_section_sits_after_equivariant_and_cites_beyer():
    cells = ["".join(c["source"]) for c in json.loads(NB.read_text())["cells"]]
    at = {label: next(i for i, s in enumerate(cells) if f"({label})=" in s)
          for label in ("positions-equivariant", "positions-curse-premise", "positions-sinusoidal")}
    assert at["positions-equivariant"] < at["positions-curse-premise"] < at["positions-sinusoidal"]
    section = "\n".join(cells[at["positions-curse-premise"]:at["positions-sinusoidal"]])
    assert "beyer1999nearest{Abstract}" in section
    assert "{ref}`positions-equivariant`" in section and "{ref}`follow_up_questions-scale`" in section


def _section():
    cells = ["".join(c["source"]) for c in json.loads(NB.read_text())["cells"]]
    start = next(i for i, s in enumerate(cells) if "(positions-curse-premise)=" in s)
    end = next(i for i, s in enumerate(cells) if "(positions-sinusoidal)=" in s)
    return "\n".join(cells[start:end])


def test_premise_is_scoped_to_unmasked_attention():
    section = _section()
    assert "attention with no mask\nis permutation-equivariant" in section
    assert "haviv2022nopos" in section  # a causal decoder gets some order from its mask
    assert "attention is permutation-equivariant and needs order" not in section
    assert "Concentration is a statement about independent random points" not in section
    assert "Interview blogs" not in section
    assert "vaswani2017attention{§3.2.1, footnote 4}" in section and "{ref}`positions-add-vs-concat`" in section


def test_cos_table_is_one_output_block():
    cell = next(c for c in json.loads(NB.read_text())["cells"] if "sqrt(d) x mean |cos|" in "".join(c["source"])
                and c["cell_type"] == "code")
    streams = [o for o in cell["outputs"] if o.get("output_type") == "stream"]
    assert len(streams) == 1
    assert len("".join(streams[0]["text"]).splitlines()) == 2 + len(WIDTHS)
