"""Section cross_and_masked_attention-pytorch-masks: nn.MultiheadAttention's key_padding_mask (N, S) and
attn_mask (L, S), where a boolean True means *ignore* (torch/nn/modules/activation.py, forward()), merged by
F.multi_head_attention_forward into one additive 0/-inf mask (_canonical_mask, then attn_mask + key_padding_mask
viewed as (N*h, 1, S)). Recomputed here in plain NumPy from those rules, without mha_kit, and compared with
the chapter's stored outputs."""
import json
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "cross_and_masked_attention.ipynb"
LENGTHS, N_TOK, D_H = [2, 4], 4, 8


def _stored(marker):
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _inputs():
    q, k, v = np.random.default_rng(3).standard_normal((3, len(LENGTHS), N_TOK, D_H))
    scores = np.einsum("bld,bsd->bls", q, k) / np.sqrt(D_H)
    real = np.arange(N_TOK)[None, :] < np.array(LENGTHS)[:, None]  # (N, S), True on real keys
    return scores, v, real


def _softmax(x):  # plain: an all -inf row gives NaN, as on MHA's need_weights=True path
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _additive(ignore):  # PyTorch's rule for a bool mask: -inf where True
    return np.where(ignore, -np.inf, 0.0)


def test_masks_and_merge():
    out = _stored("def canonical(")
    _, _, real = _inputs()
    not_allowed = np.triu(np.ones((N_TOK, N_TOK), dtype=bool), k=1)  # causal: key j > query i is not allowed
    assert "key_padding_mask (True = ignore):\n " + str((~real).astype(int)) in out
    assert "attn_mask (True = not allowed):\n " + str(not_allowed.astype(int)) in out
    merged = _additive(not_allowed)[None] + _additive(~real)[:, None, :]  # (N, L, S)
    assert "merged additive mask, sequence 0:\n " + str(merged[0]) in out
    # sequence 0 has 2 real keys: every query sees at most keys 0 and 1, query 0 only key 0
    assert [int((row == 0).sum()) for row in merged[0]] == [1, 2, 2, 2]
    assert "merged mask equals the book's & of keep-masks: True" in out
    assert "outputs equal: True" in out


def test_inverted_boolean_slip():
    out = _stored("def plain_softmax(")
    scores, _, real = _inputs()
    right = _softmax(scores + _additive(~real)[:, None, :])
    slipped = _softmax(scores + _additive(real)[:, None, :])  # the real keys hidden instead of the pads
    n0 = LENGTHS[0]
    on_pads = slipped[0, :n0, n0:].sum() / n0
    assert on_pads == 1.0  # every real query of sequence 0 sees only the pads
    assert f"weight on the pads per real query {on_pads:.2f}, correct mask {right[0, :n0, n0:].sum() / n0:.2f}" in out
    nan_rows = int(np.isnan(slipped[1]).any(axis=-1).sum())
    assert nan_rows == N_TOK  # no padding, so every key of every row is hidden
    assert f"NaN rows {nan_rows} of {N_TOK}, correct mask 0" in out
    assert "safe softmax, full sequence's weights all zero: True" in out
    float01 = _softmax(scores + real[:, None, :].astype(float))  # a 0/1 float mask is added, not applied
    pad_share = float01[0, :n0, n0:].sum() / n0
    assert 0.1 < pad_share < 0.9
    assert f"0/1 float mask, sequence 0: weight on pads per real query {pad_share:.2f}" in out


def test_conventions_stated():
    text = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "markdown")
    section = text[text.index("(cross_and_masked_attention-pytorch-masks)="):text.index("(cross_and_masked_attention-no-key)=")]
    assert "$(N, S)$" in section and "$(L, S)$" in section and r"$(N \cdot \text{num\_heads}, L, S)$" in section
    assert "*should* take part in attention" in section  # SDPA's opposite convention
    for key in ("pytorch_mha_forward", "pytorch_mha_functional", "pytorchsdpa"):
        assert key in section
    # MHA's is_causal is a hint that needs the mask (functional.py raises without one); only SDPA takes it alone
    assert "Need attn_mask if specifying the is_causal hint" in section
    assert "is_causal=True` with no tensor" in section and "Only\n`F.scaled_dot_product_attention`" in section
    assert "batch-major" in section and r"b \cdot \text{num\_heads} + h" in section
    assert "int64" in section and "silent zeros through SDPA" in section
