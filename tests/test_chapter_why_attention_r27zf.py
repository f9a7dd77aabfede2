"""why_attention-seq2seq-formulas: one seq2seq attention step (Bahdanau et al. 2015, §3.1; Luong et al. 2015,
§3.1) recomputed with plain numpy from the formulas, e_j = score(q, h_j), alpha = softmax(e), c = sum_j alpha_j h_j,
Luong's h~ = tanh(W_c [c; h_t]), and compared with the chapter's stored output; plus the section's place,
links and citations."""
import json
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "why_attention.ipynb"


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stored_text():
    cell = next(c for c in _cells() if c["cell_type"] == "code" and "default_rng(31)" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _softmax(x):
    z = np.exp(x - x.max())
    return z / z.sum()


def _recompute():
    """The same draws in the same order; every score written as a loop over j, from the papers' formulas."""
    rng = np.random.default_rng(31)
    S, d, vocab = 6, 4, 10
    H = rng.standard_normal((S, d))
    q = rng.standard_normal(d)
    W_gen = rng.standard_normal((d, d))
    W_cat, v_cat = rng.standard_normal((d, 2 * d)), rng.standard_normal(d)
    scores = {
        "dot": np.array([sum(q[k] * H[j, k] for k in range(d)) for j in range(S)]),
        "general": np.array([q @ W_gen @ H[j] for j in range(S)]),
        "concat": np.array([v_cat @ np.tanh(W_cat @ np.concatenate([q, H[j]])) for j in range(S)]),
    }
    out = {}
    for name, e in scores.items():
        alpha = _softmax(e)
        c = sum(alpha[j] * H[j] for j in range(S))
        out[name] = (e, alpha, c)
    W_c, W_s = rng.standard_normal((d, 2 * d)), rng.standard_normal((vocab, d))
    h_tilde = np.tanh(W_c @ np.concatenate([out["dot"][2], q]))
    p_y = _softmax(W_s @ h_tilde)
    return out, h_tilde, p_y


def test_scores_weights_contexts_match_the_formulas():
    text = _stored_text()
    out, h_tilde, p_y = _recompute()
    for name, (e, alpha, c) in out.items():
        assert f"{name:<8} e     = {np.round(e, 3)}" in text, name
        assert f"alpha = {np.round(alpha, 3)}  sums to 1: True, largest at j = {alpha.argmax() + 1}" in text, name
        assert f"c     = {np.round(c, 3)}" in text, name
        assert abs(alpha.sum() - 1) < 1e-12
    assert f"h~ = {np.round(h_tilde, 3)}" in text
    assert f"most likely word id {p_y.argmax()} ({p_y.max():.3f})" in text
    assert "output equals the dot context: True" in text
    # the three scores do not agree on the best source position: concat picks another one
    assert out["dot"][1].argmax() == out["general"][1].argmax() != out["concat"][1].argmax()


def test_transformer_form_with_k_equal_v_is_the_dot_context():
    out, _, _ = _recompute()
    rng = np.random.default_rng(31)
    H, q = rng.standard_normal((6, 4)), rng.standard_normal(4)
    scaled = (q * 2.0) @ H.T / np.sqrt(4)  # Q = q sqrt(d), divided by sqrt(d_k): the plain dot score
    context = _softmax(scaled) @ H
    assert np.allclose(context, out["dot"][2])
    text = _stored_text()  # the chapter printed this same context for the dot score, and the kit's match
    assert f"c     = {np.round(context, 3)}" in text
    assert "output equals the dot context: True" in text


def _section():
    src = ["".join(c["source"]) for c in _cells()]
    start = next(i for i, s in enumerate(src) if "(why_attention-seq2seq-formulas)=" in s)
    end = next(i for i, s in enumerate(src) if "(why_attention-derivations)=" in s)
    before = next(i for i, s in enumerate(src) if "(why_attention-dot-vs-additive)=" in s)
    assert before < start < end
    return "\n".join(src[start:end])


def test_section_place_links_and_citations():
    text = _section()
    assert "### Seq2seq attention written out" in text
    for key in ("bahdanau2015neural{§3.1", "luong2015effective{§3.1}", "bentrevett_seq2seq_bahdanau{",
                "opennmt_global_attention{"):
        assert f"`{key}" in text, key
    for label in ("why_attention-qkv-roles", "why_attention-hard-soft", "cross_and_masked_attention-self-cross"):
        assert f"{{ref}}`{label}`" in text, label
    for formula in (r"e_{ij} = a(s_{i-1}, h_j)", r"s_i = f(s_{i-1}, y_{i-1}, c_i)", r"\tilde h_t = \tanh(W_c [c_t; h_t])",
                    r"[p_t - D, p_t + D]", "$2D + 1$"):
        assert formula in text, formula
    assert "**The decoder state is the query:**" in text
    assert "**The encoder states are both\nthe keys and the values:**" in text
    assert ":class: dropdown" in text
