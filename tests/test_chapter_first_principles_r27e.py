"""Section first_principles-whiteboard: one numpy multi-head self-attention function against the kit, its causal
property, the two silent slips, and the cost (8 n d^2 projection FLOPs, 4 n^2 d attention FLOPs, equal at n = 2d;
Vaswani et al. 2017, 3.2), recomputed here from the formulas, not through mha_kit."""
import re

import numpy as np
import pytest

from tests.chapter_outputs import glued, notebook, printed, section

NB = notebook("first_principles")
D, H = 4096, 32  # the section's stated shape


def _softmax_rows(s):
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def _loop_mha(x, w_q, w_k, w_v, w_o, h, causal):
    """One token, one head at a time: the definition, with no reshape to get wrong."""
    n, d = x.shape
    d_h = d // h
    out = np.zeros((n, d))
    for i in range(h):
        cols = slice(i * d_h, (i + 1) * d_h)
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]
        s = q @ k.T / np.sqrt(d_h)
        if causal:
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        out += _softmax_rows(s) @ v @ w_o[cols]
    return out


def _function():
    src = "".join(next("".join(c["source"]) for c in NB["cells"] if "def mha_forward(" in "".join(c["source"])))
    scope = {"np": np}
    exec(src, scope)  # the chapter's own function, run against the loop definition above
    return scope["mha_forward"]


@pytest.mark.parametrize("causal", [False, True])
def test_function_matches_the_per_head_loop(causal):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 7, 12))
    w = [rng.standard_normal((12, 12)) / 4 for _ in range(4)]
    mask = np.tril(np.ones((7, 7), bool)) if causal else None
    ours = _function()(x, *w, num_heads=3, mask=mask)
    for b in range(3):
        assert np.abs(ours[b] - _loop_mha(x[b], *w, 3, causal)).max() < 1e-12


def test_fully_masked_row_is_zero_and_bad_heads_raise():
    f = _function()
    x = np.ones((1, 2, 4))
    w = [np.eye(4)] * 4
    mask = np.array([[False, False], [True, True]])
    out = f(x, *w, num_heads=2, mask=mask)
    assert np.all(out[0, 0] == 0) and np.isfinite(out).all()
    with pytest.raises(ValueError, match=r"d \(4\) must be divisible by num_heads \(3\)"):
        f(x, *w, num_heads=3)


def test_printed_checks_are_all_true():
    text = printed(NB, "rng = np.random.default_rng(27)") + printed(NB, "x_changed = x_wb.copy()")
    assert text.count(": True") == 8 and "False" not in text


def test_fp16_fill_overflows():
    with np.errstate(over="ignore"):
        fill = np.float16(-1e9)
    assert np.isneginf(fill)  # -1e9 is beyond fp16's range, so the "finite" fill is -inf again
    lowest = float(np.finfo(np.float16).min)
    assert lowest == -(2 - 2**-10) * 2**15  # largest fp16 magnitude: (2 - 2^-10) * 2^15
    assert f"-1e9 as float16: -inf | float16 lowest finite: {lowest:,.0f}" in printed(NB, "x_changed = x_wb.copy()")
    assert glued(NB, "fp_wb_f16_fill") == "-inf" and glued(NB, "fp_wb_f16_min") == f"{lowest:,.0f}"


def test_slips_differ_and_bare_reshape_map():
    text = printed(NB, "labels = np.array(")
    assert "bare reshape, 'head 0': [['t0h0', 't0h0'], ['t0h1', 't0h1'], ['t1h0', 't1h0']]" in text
    assert "reshape + transpose, head 0: [['t0h0', 't0h0'], ['t1h0', 't1h0'], ['t2h0', 't2h0']]" in text
    diffs = [float(v) for v in re.findall(r"max abs difference: ([0-9.e+-]+)", text)]
    assert len(diffs) == 2 and min(diffs) > 0.1
    assert "rows sum to one: False" in text


def test_cost_lines():
    text = printed(NB, "wide = mk.AttentionConfig(d_model=4096")
    assert f"{2 * D:,} = 2d: True" in text
    for n in (2048, 8192, 32768):
        proj, attn = 8 * n * D * D, 4 * n * n * D
        per_head_mib = n * n * 4 / 2**20  # fp32 scores of one head
        ratio = attn // proj if attn >= proj else f"1/{proj // attn}"
        assert (f"n = {n:>6}: projections {proj:,} FLOPs, attention {attn:,} FLOPs, "
                f"attention/projections = {ratio}, fp32 scores per head {per_head_mib:g} MiB") in text
    assert glued(NB, "fp_wb_cross") == f"{2 * D:,}"
    assert glued(NB, "fp_wb_head_mib") == f"{32768**2 * 4 / 2**20:g}"
    assert glued(NB, "fp_wb_all_gib") == f"{H * 32768**2 * 4 / 2**30:g}"


def test_section_sits_before_the_chain_and_cites():
    text = section(NB, "first_principles-whiteboard", "first_principles-chain")
    for key in ("qa_prachub_mha", "pytorch_safe_softmax", "pytorchsdpa", "vaswani2017attention",
                "pytorch_sdp_utils", "pytorch_mha_safe_softmax", "hf_mask_utils"):
        assert key in text
    assert text.count(":class: dropdown\n") == 3 and "In the interview" in text
    assert "falling back to a C++ math" in text and "n(n+1)/2" in text
