"""why_attention-lstm-gru: parameters per layer of PyTorch's LSTM and GRU (torch.nn.GRU/LSTM "Variables": stacked
blocks of (hidden, input) and (hidden, hidden) weights, bias_ih and bias_hh), a GRU step against Cho et al. 2014
§2.3 and PyTorch's reset-after form, and GPT-2's recurrent state against its KV cache, recomputed by hand."""
import json
import math
import pathlib

import numpy as np
import chapter_outputs

NB = pathlib.Path(__file__).parents[1] / "book" / "why_attention.ipynb"
D, LAYERS, HEAD_DIM, HEADS, N_CTX, BF16 = 768, 12, 64, 12, 1024, 2  # GPT-2 (HF GPT2Config defaults)


def _stored(marker):
    nb = json.loads(NB.read_text())
    return chapter_outputs.printed(nb, marker), chapter_outputs.cell_glue(nb, marker)


def test_parameter_counts_per_layer():
    x = h = D
    lstm = 4 * h * x + 4 * h * h + 4 * h + 4 * h  # weight_ih (4h, x), weight_hh (4h, h), bias_ih, bias_hh (4h)
    gru = 3 * h * x + 3 * h * h + 3 * h + 3 * h
    assert (lstm, gru) == (4_724_736, 3_543_552)
    assert gru * 4 == lstm * 3
    text, glued = _stored("def recurrent_layer_params(")
    assert glued == {"wa_lstm_params": f"{lstm:,}", "wa_gru_params": f"{gru:,}"}
    assert f"one bias {4 * (h * (h + x) + h):>9,}" in text and f"one bias {3 * (h * (h + x) + h):>9,}" in text
    assert f"four projections at d = {D}: {4 * D * D:,}" in text


def _sig(a):
    return 1 / (1 + math.exp(-a))


def _unit_by_unit(x, h, w_ih, w_hh, b_ih, b_hh, reset_after):
    n_hid, out = len(h), []
    for j in range(n_hid):
        row = [(w_ih[k * n_hid + j], w_hh[k * n_hid + j], b_ih[k * n_hid + j], b_hh[k * n_hid + j]) for k in range(3)]
        (wr, ur, br, cr), (wz, uz, bz, cz), (wn, un, bn, cn) = row
        r = _sig(float(wr @ x + br + ur @ h + cr))
        z = _sig(float(wz @ x + bz + uz @ h + cz))
        if reset_after:  # torch.nn.GRU
            cand = math.tanh(float(wn @ x + bn + r * (un @ h + cn)))
        else:  # Cho et al. §2.3: reset the whole state before the product (biases as in PyTorch)
            r_all = np.array([_sig(float(w_ih[i] @ x + b_ih[i] + w_hh[i] @ h + b_hh[i])) for i in range(n_hid)])
            cand = math.tanh(float(wn @ x + bn + un @ (r_all * h) + cn))
        out.append(z * h[j] + (1 - z) * cand)
    return np.array(out)


def test_gru_step_matches_the_equations_and_the_stored_output():
    rng = np.random.default_rng(28)  # the chapter's draws, in its order
    n_in, n_hid = 3, 4
    w_ih, w_hh = rng.standard_normal((3 * n_hid, n_in)), rng.standard_normal((3 * n_hid, n_hid))
    b_ih, b_hh = 0.1 * rng.standard_normal((2, 3 * n_hid))
    x, h = rng.standard_normal(n_in), rng.standard_normal(n_hid)
    h_t = _unit_by_unit(x, h, w_ih, w_hh, b_ih, b_hh, reset_after=True)
    h_cho = _unit_by_unit(x, h, w_ih, w_hh, b_ih, b_hh, reset_after=False)
    assert not np.allclose(h_t, h_cho)
    text, _ = _stored("def gru_step(")
    with np.printoptions(precision=3, suppress=True):
        assert f"h_t: {h_t}" in text
    assert text.count("True") == 3 and "False" not in text


def test_fixed_state_against_growing_cache():
    lstm_state = 2 * LAYERS * D * BF16
    kv_token = 2 * LAYERS * HEADS * HEAD_DIM * BF16
    assert lstm_state == kv_token == 36 * 1024
    text, glued = _stored("state_bytes = {")
    assert glued == {"wa_lstm_state": "36 KiB", "wa_kv_full": f"{N_CTX * kv_token // 2**20} MiB"}
    assert "GRU state, 12 layers: 18 KiB" in text


def test_cost_per_generated_token():
    # per layer and token, 2 FLOPs per multiply-add: an LSTM multiplies x and h by four d x d blocks; attention's
    # Q, K, V, O projections are 4 d^2 multiply-adds, then q.k and weights.v over `position` cached tokens
    lstm, gru = 2 * 4 * 2 * D * D, 2 * 3 * 2 * D * D
    attn_first, attn_full = 8 * D * D + 4 * 1 * D, 8 * D * D + 4 * N_CTX * D
    assert (lstm, gru, attn_full) == (9_437_184, 7_077_888, 7_864_320)
    assert attn_first < gru < attn_full < lstm  # attention grows past the GRU within GPT-2's context
    text, glued = _stored("def flops_per_token(")
    assert glued == {"wa_lstm_tok_flops": f"{lstm:,}", "wa_attn_tok_flops": f"{attn_full:,}",
                     "wa_attn_cache_share": f"{4 * N_CTX * D / attn_full:.0%}"}
    assert f"token     1: LSTM {lstm:,}, GRU {gru:,}, attention {attn_first:,} FLOPs" in text
    assert f"token {N_CTX:,}: LSTM {lstm:,}, GRU {gru:,}, attention {attn_full:,} FLOPs" in text
