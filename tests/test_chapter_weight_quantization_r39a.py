"""Section weight_quantization-gptq-derivation: GPTQ's update derived from the Hessian, checked step by step.

Recomputed here without the inverse Hessian: after weight q is rounded, the weights still free are refitted by
least squares to the original row's outputs on the 64 tokens (the minimum that the Lagrange solution claims to
give), and each step's rise of ||wX - vX||^2 is measured directly. Those rises must equal the chapter's printed
predictions (w_q - quant(w_q))^2 / (2 [H_F^-1]_qq) and measured rises, the final grid codes must match exactly,
and GPTQ's loss must be below round-to-nearest's. The same seeded data (default_rng(39), 64 x 8 correlated
inputs, one row of 8 weights, 3-bit min-max grid as GPTQ's quant.py: scale = (max - min) / 7, zero =
round(-min / scale), min and max stretched to contain 0)."""
import json
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "weight_quantization.ipynb"


def _lines():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c.get("id") == "weight_quantization-gptq-derivation-2")
    assert not [o for o in cell["outputs"] if o.get("name") == "stderr"]
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").strip().splitlines()


def _data():
    rng = np.random.default_rng(39)
    x = rng.normal(0, 1, size=(64, 8)) @ (rng.normal(0, 1, size=(8, 8)) / np.sqrt(8))
    w = rng.normal(0, 1, size=8)
    lo, hi = min(w.min(), 0.0), max(w.max(), 0.0)
    scale = (hi - lo) / 7
    zero = np.rint(-lo / scale)
    return x, w, scale, zero


def _gptq_by_least_squares():
    """Quantize left to right; after each weight, refit the free ones by least squares. Returns (rows, v)."""
    x, w, scale, zero = _data()
    y = x @ w

    def code(t):  # nearest code of the 3-bit grid
        return float(np.clip(np.rint(t / scale) + zero, 0, 7))

    v, rows = w.copy(), []
    for q in range(8):
        before = float(np.sum((y - x @ v) ** 2))
        target = scale * (code(v[q]) - zero)
        v[q] = target
        if q < 7:  # the free weights q+1..7 best reproduce y given the fixed ones
            rest = y - x[:, : q + 1] @ v[: q + 1]
            v[q + 1:] = np.linalg.lstsq(x[:, q + 1:], rest, rcond=None)[0]
        rows.append((before, float(np.sum((y - x @ v) ** 2)), target))
    return rows, v, (x, w, scale, zero)


def test_step_table_matches_least_squares_rises():
    lines = _lines()
    rows, _, (x, w, scale, zero) = _gptq_by_least_squares()
    table = [line.split() for line in lines[1:9]]
    for q, (cols, (before, after, target)) in enumerate(zip(table, rows)):
        assert int(cols[0]) == q
        assert float(cols[2]) == round(target, 3)
        rise = after - before
        assert float(cols[4]) == round(rise, 4) and float(cols[5]) == round(rise, 4)
    # the first step's [H_F^-1]_qq: 1 / (2 * (the residual of column 0 on columns 1..7)^2), a Schur complement
    r0 = x[:, 0] - x[:, 1:] @ np.linalg.lstsq(x[:, 1:], x[:, 0], rcond=None)[0]
    assert float(table[0][3]) == round(1 / (2 * float(r0 @ r0)), 5)
    assert float(table[0][1]) == round(w[0], 3)
    # the largest rise is at step 3, as the prose says
    rises = [after - before for before, after, _ in rows]
    assert int(np.argmax(rises)) == 3 and float(table[3][1]) == -1.435 and float(table[3][2]) == -1.181


def test_codes_losses_and_bounds():
    lines = _lines()
    rows, v, (x, w, scale, zero) = _gptq_by_least_squares()
    codes = [int(c) for c in np.rint(v / scale + zero)]
    rtn = scale * (np.clip(np.rint(w / scale) + zero, 0, 7) - zero)
    rtn_codes = [int(c) for c in np.rint(rtn / scale + zero)]
    loss, loss_rtn = rows[-1][1], float(np.sum((x @ (w - rtn)) ** 2))
    assert codes == [0, 2, 3, 0, 6, 3, 0, 3] and rtn_codes == [0, 2, 3, 0, 7, 3, 0, 3]
    assert [i for i in range(8) if codes[i] != rtn_codes[i]] == [4]
    assert lines[9] == f"GPTQ codes {codes}, loss {loss:.4f}; round to nearest {rtn_codes}, loss {loss_rtn:.4f}"
    assert abs(sum(after - before for before, after, _ in rows) - loss) < 1e-9  # rises add up to the loss
    assert loss < loss_rtn
    assert all(line.endswith("below 1e-12") for line in lines[10:15]) and len(lines) == 15


def test_glued_values():
    nb = json.loads(NB.read_text())
    glued = {o["metadata"]["scrapbook"]["name"]: o["data"]["application/papermill.record/text/plain"]
             for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
             if "scrapbook" in o.get("metadata", {})}
    rows, v, (x, w, scale, zero) = _gptq_by_least_squares()
    rtn = scale * (np.clip(np.rint(w / scale) + zero, 0, 7) - zero)
    loss, loss_rtn = rows[-1][1], float(np.sum((x @ (w - rtn)) ** 2))
    assert glued["gd39_gptq"].strip("'") == f"{loss:.2f}" and glued["gd39_rtn"].strip("'") == f"{loss_rtn:.2f}"
    assert glued["gd39_ratio"].strip("'") == f"{loss / loss_rtn:.0%}"


def test_cholesky_rows_are_the_downdated_rows():
    """The identity of step 4 on this H, by Schur complements rather than by a factorisation."""
    x, *_ = _data()
    h = 2 * x.T @ x
    u = np.linalg.cholesky(np.linalg.inv(h)).T
    for q in range(8):
        hinv_f = np.linalg.inv(h[q:, q:])
        assert np.allclose(u[q, q:], hinv_f[0] / np.sqrt(hinv_f[0, 0]), rtol=0, atol=1e-12)


def test_lazy_block_update_matches_column_by_column():
    """The prose's claim about the reference code: updating the columns past a block once per block with
    Err1 @ Hinv[i1:i2, i2:] gives the same weights as updating every later column after every column."""
    x, w, scale, zero = _data()
    u = np.linalg.cholesky(np.linalg.inv(2 * x.T @ x)).T
    rows = np.vstack([w, np.random.default_rng(7).normal(0, 1, size=(3, 8))])

    def quant(v):
        return scale * (np.clip(np.rint(v / scale) + zero, 0, 7) - zero)

    plain = rows.copy()
    for q in range(8):
        plain[:, q:] -= np.outer((plain[:, q] - quant(plain[:, q])) / u[q, q], u[q, q:])
    lazy = rows.copy()
    for i1 in range(0, 8, 3):  # blocks of 3 columns: 0-2, 3-5, 6-7
        i2 = min(i1 + 3, 8)
        err = np.zeros((rows.shape[0], i2 - i1))
        for i in range(i1, i2):
            err[:, i - i1] = (lazy[:, i] - quant(lazy[:, i])) / u[i, i]
            lazy[:, i:i2] -= np.outer(err[:, i - i1], u[i, i:i2])
        lazy[:, i2:] -= err @ u[i1:i2, i2:]
    assert np.allclose(lazy, plain, rtol=0, atol=1e-12)
    assert np.allclose(plain[0], quant(plain[0]), rtol=0, atol=1e-12)  # every weight ends on the grid
    # and the chapter states it, with the damping the reference code adds first
    nb = json.loads(NB.read_text())
    text = "".join(nb["cells"][next(i for i, c in enumerate(nb["cells"]) if "(weight_quantization-gptq-derivation)="
                                    in "".join(c["source"]))]["source"])
    assert "Err1.matmul(Hinv[i1:i2, i2:])" in text and "percdamp" in text and "outlier = .25 * scale ** 2" in text
