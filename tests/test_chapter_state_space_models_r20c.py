"""state_space_models-bidirectional: mixing FLOPs of bidirectional attention against two selective scans,
the scan state, and why a bidirectional layer cannot decode token by token.

Recomputed from the formulas (4 n^2 d for Q K^T and P V; 9 FLOPs per token, channel and state element per
scan, two scans) and the Mamba 2.8B config (d_model 2560, expand 2, d_state 16, d_conv 4), with an
independent recurrence rather than mha_kit's scan.
"""

import json
from pathlib import Path

import numpy as np

import mha_kit as mk

NB = Path(__file__).resolve().parents[1] / "book" / "state_space_models.ipynb"
D_MODEL, D_INNER, N_STATE = 2560, 2 * 2560, 16


def _glued():
    values = {}
    for cell in json.loads(NB.read_text())["cells"]:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook", {})
            if meta.get("name", "").startswith("bidir_"):
                values[meta["name"]] = out["data"]["application/papermill.record/text/plain"].strip("'")
    return values


def test_flops_and_ratios_match_the_formulas():
    g = _glued()
    for n, attn, scan, ratio in ((1024, "10.7", "1.5", "7"), (8192, "687.2", "12.1", "57"),
                                 (65536, "43,980.5", "96.6", "455")):
        a = 4 * n**2 * D_MODEL
        s = 18 * n * D_INNER * N_STATE
        assert (f"{a / 1e9:,.1f}", f"{s / 1e9:,.1f}", f"{a / s:.0f}") == (attn, scan, ratio)
        assert (g[f"bidir_attn_{n}"], g[f"bidir_scan_{n}"], g[f"bidir_ratio_{n}"]) == (attn, scan, ratio)
        assert abs(a / s - n / 144) < 1e-9  # the ratio is n over the crossover length


def test_crossover_and_state_bytes():
    g = _glued()
    n_star = 18 * D_INNER * N_STATE / (4 * D_MODEL)
    assert n_star == 144 and g["bidir_crossover"] == "144"
    assert 4 * 144**2 * D_MODEL == 18 * 144 * D_INNER * N_STATE
    per_direction = (D_INNER * N_STATE + D_INNER * (4 - 1)) * 2  # bf16: state plus 3-column conv window
    assert per_direction == 194_560 == mk.mamba_state_bytes(D_MODEL, d_state=16, expand=2, d_conv=4)
    assert g["bidir_state"] == "190 KiB" and g["bidir_state2"] == "380 KiB"
    assert 65536**2 * 32 * 2 == 256 * 2**30 and g["bidir_scores_65536"] == "256 GiB"


def _scan(x, delta, A, B, C):
    h, ys = np.zeros_like(A), []
    for t in range(len(x)):
        h = np.exp(delta[t][:, None] * A) * h + (delta[t] * x[t])[:, None] * B[t][None, :]
        ys.append(h @ C[t])
    return np.array(ys)


def test_appending_a_token_changes_bidirectional_outputs_only():
    rng = np.random.default_rng(7)
    L, d, N = 20, 3, 5
    x, delta = rng.normal(size=(L + 1, d)), 0.1 + rng.random(size=(L + 1, d))
    A = -np.tile(np.arange(1.0, N + 1), (d, 1))
    B, C = rng.normal(size=(L + 1, N)), rng.normal(size=(L + 1, N))

    def fwd(t):
        return _scan(x[:t], delta[:t], A, B[:t], C[:t])

    def bi(t):
        return fwd(t) + _scan(x[:t][::-1], delta[:t][::-1], A, B[:t][::-1], C[:t][::-1])[::-1]

    assert np.array_equal(fwd(L + 1)[:L], fwd(L))
    assert (np.abs(bi(L + 1)[:L] - bi(L)).max(axis=1) > 0).all()
    # mha_kit's scan agrees with this recurrence, so the chapter's cell shows the same property
    assert np.allclose(mk.selective_scan(x, delta, A, B, C)[0], fwd(L + 1), rtol=1e-12, atol=1e-12)
    g = _glued()
    assert (g["bidir_changed_causal"], g["bidir_changed_bidirectional"], g["bidir_L"]) == ("0", "32", "32")
