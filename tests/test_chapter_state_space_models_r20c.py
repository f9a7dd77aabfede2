"""state_space_models-bidirectional: mixing FLOPs of bidirectional attention against two selective scans,
per-layer and whole-model FLOPs with projections counted, the scan state, and why a bidirectional layer
cannot decode incrementally.

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


def test_causal_mixing_ratio_halves_and_crossover_doubles():
    g = _glued()
    n = 65536
    assert f"{2 * n * n * D_MODEL / (18 * n * D_INNER * N_STATE):.0f}" == "228" == g["bidir_ratio_causal_65536"]
    assert 2 * 288**2 * D_MODEL == 18 * 288 * D_INNER * N_STATE and g["bidir_crossover_causal"] == "288"


def _layer_flops():
    """Per token, from the module shapes in Vim's mamba_simple.py (in_proj d -> 2 d_inner, out_proj d_inner -> d,
    x_proj d_inner -> dt_rank + 2N, dt_proj dt_rank -> d_inner, depthwise conv of width 4) and 9 d_inner N for the scan."""
    dt_rank = -(-D_MODEL // 16)
    shared = 2 * (D_MODEL * 2 * D_INNER) + 2 * (D_INNER * D_MODEL)
    per_dir = 2 * 4 * D_INNER + 2 * D_INNER * (dt_rank + 32) + 2 * dt_rank * D_INNER + 9 * D_INNER * N_STATE
    return shared + per_dir, shared + 2 * per_dir, 2 * (shared + per_dir)


def test_layer_costs_depend_on_what_is_shared():
    g = _glued()
    causal, vim, cad = _layer_flops()
    assert (causal, vim, cad) == (83_025_920, 87_408_640, 166_051_840)
    assert (g["bidir_layer_causal"], g["bidir_layer_vim"], g["bidir_layer_cad"]) == ("83.0", "1.05", "2")
    assert 9 * D_INNER * N_STATE / causal < 0.01  # the scan is under 1% of a causal layer


def test_whole_model_ratios_and_crossovers():
    g = _glued()
    _, vim, cad = _layer_flops()

    def pythia(n, c):  # 32 layers of 12 d^2 weights plus c n^2 d mixing (c = 4 non-causal, 2 causal)
        return 32 * (24 * D_MODEL**2 * n + c * n * n * D_MODEL)

    n = 65536
    assert f"{pythia(n, 4) / (64 * vim * n):.1f}" == "4.7" == g["bidir_model_ratio"]
    assert f"{pythia(n, 2) / (64 * vim * n):.1f}" == "2.8" == g["bidir_model_ratio_causal"]
    assert f"{pythia(n, 2) / (64 * cad * n):.1f}" == "1.5" == g["bidir_model_ratio_cad"]
    for per_token, key, nc, c in ((vim, "vim", 1712, 3424), (cad, "cad", 17072, 34144)):
        assert 64 * per_token * nc == pythia(nc, 4) and 64 * per_token * c == pythia(c, 2)
        assert (g[f"bidir_model_crossover_{key}"], g[f"bidir_model_crossover_{key}_causal"]) == (f"{nc:,}", f"{c:,}")
    assert 64 * vim * 1024 > pythia(1024, 4)  # at 1K the bidirectional stack needs more FLOPs


def test_activation_bytes_at_64k():
    assert 65536 * D_INNER * 2 == 640 * 2**20 and _glued()["bidir_x_act"] == "640 MiB"
