"""Section cross_and_masked_attention-encoder-decoder-walk: shapes of the 2017 encoder-decoder, base model
(arXiv:1706.03762 sec. 3.1-3.5, 5.1, Table 3), its parameter count and what one target token reads, recomputed
from the paper's constants and compared with the chapter's stored outputs."""
import json
import pathlib
import re

NB = pathlib.Path(__file__).parents[1] / "book" / "cross_and_masked_attention.ipynb"
D, H, D_FF, N, V = 512, 8, 2048, 6, 37_000  # Table 3 (base) and sec. 5.1 (about 37000 BPE tokens)
D_K = D // H  # sec. 3.2.2: d_k = d_v = d_model / h = 64
N_SRC, N_TGT = 128, 32  # the walk's target is shorter than the source so the two lengths show apart
J = 20  # the target token the causal check changes; position J + 1 reads it


def _stored(marker):
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _int(text, label):
    return int(re.search(re.escape(label) + r"\s+([\d,]+)", text).group(1).replace(",", ""))


def test_shape_trace():
    out = _stored("def encode(")
    enc = (f"Q {(H, N_SRC, D_K)}, K {(H, N_SRC, D_K)}, V {(H, N_SRC, D_K)}, scores {(H, N_SRC, N_SRC)}, "
           f"concat {(N_SRC, H * D_K)}, W_O {(H * D_K, D)}")
    self_ = (f"Q {(H, N_TGT, D_K)}, K {(H, N_TGT, D_K)}, V {(H, N_TGT, D_K)}, scores {(H, N_TGT, N_TGT)}, "
             f"concat {(N_TGT, H * D_K)}")
    cross = (f"Q {(H, N_TGT, D_K)}, K {(H, N_SRC, D_K)}, V {(H, N_SRC, D_K)}, scores {(H, N_TGT, N_SRC)}, "
             f"concat {(N_TGT, H * D_K)}")
    assert f"encoder self-attention: {enc}" in out
    assert f"masked self-attention: {self_}" in out
    assert f"cross-attention: {cross}" in out
    assert f"FFN: {(N_SRC, D)} -> {(N_SRC, D_FF)} -> {(N_SRC, D)}" in out
    run = int(re.search(r"memory after (\d+) of the (\d+) encoder layers", out).group(1))
    assert 1 <= run <= N  # the cell may run fewer layers than the model has; the shapes do not depend on it
    assert f"memory after {run} of the {N} encoder layers: {(N_SRC, D)}" in out
    assert f"encoder layer 1 of {N}:" in out and f"decoder layer 1 of {N}:" in out
    assert (f"after {run} of the {N} decoder layers: logits {(N_TGT, V)} -> softmax {(N_TGT, V)}, "
            "rows sum to 1: True") in out


def test_causal_and_cross_checks():
    out = _stored("tgt_changed")
    assert "traced attention equals mk.multi_head_attention: True" in out
    # the check compares the decoder's last hidden states; logits row i = hidden row i @ E^T, E of full rank
    assert (f"target token {J} changed, decoder hidden states: rows 0..{J} unchanged: True; "
            f"rows {J + 1}..{N_TGT - 1} changed: True") in out
    md = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "markdown")
    assert "full column rank" in md and "target token {glue:text}`encdec_j`" in md
    assert f"target rows changed: {N_TGT} of {N_TGT}" in out


def test_parameter_count():
    out = _stored("shared_emb = ")
    mha = H * 3 * D * D_K + H * D_K * D  # h heads of W_Q, W_K, W_V (d x d_k) and W_O (h d_v x d)
    ffn = D * D_FF + D_FF + D_FF * D + D  # eq. 2
    enc = mha + ffn + 2 * 2 * D
    dec = 2 * mha + ffn + 3 * 2 * D
    assert _int(out, "shared embedding / softmax (V x d)") == V * D == 18_944_000
    assert _int(out, "encoder, 6 layers") == N * enc
    assert _int(out, "decoder, 6 layers") == N * dec
    total = V * D + N * (enc + dec)
    assert _int(out, "total") == total == 63_045_632
    assert abs(total / 65e6 - 1) < 0.05  # Table 3: 65 x 10^6, within the vocabulary's "about"
    assert f"with a separate source embedding: {total + V * D:,}" in out
    assert f"with attention biases: {total + N * 12 * D:,}" in out


def test_one_token_walk():
    out = _stored("pos = 5")
    assert f"nonzero weights on {5 + 1} of {N_TGT} target keys" in out  # positions 0..5
    assert f"nonzero weights on {N_SRC} of {N_SRC} source keys" in out
    assert f"computed once: {2 * N * N_SRC * D:,} numbers" in out
    assert f"grow by {2 * N * H * D_K:,} numbers a token" in out


def test_untied_vocab_and_norms():
    out = _stored("shared_emb = ")
    mha = 4 * D * D
    ffn = 2 * D * D_FF + D_FF + D
    total = V * D + N * (mha + ffn + 4 * D) + N * (2 * mha + ffn + 6 * D)
    assert f"with all three matrices separate: {total + 2 * V * D:,}" in out
    assert f"with a 32,000 vocabulary: {total - (V - 32_000) * D:,}" in out  # sec. 5.1, EN-FR word pieces
    # rows drawn with std d**-0.5 have norm ~1; each sinusoid position has d/2 (sin, cos) pairs -> sqrt(d/2)
    assert f"x sqrt(d): {D ** 0.5:.1f}" in out
    assert f"sinusoid norm {(D / 2) ** 0.5:.1f}" in out


def test_cross_recompute_cost_and_asked_shapes():
    out = _stored("pos = 5")
    gemms = 2 * N  # memory @ W_K and memory @ W_V per decoder layer
    assert gemms == 12
    flops = gemms * 2 * N_SRC * D * D
    assert f"without that cache: {gemms} products ({N_SRC}, {D}) @ ({D}, {D}) a step, {flops:,} FLOPs" in out
    assert f"masked self-attention weights {(H, N_SRC, N_SRC)}, cross-attention weights {(H, N_SRC, N_SRC)}" in out
    md = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "markdown")
    assert "6 matrix products" not in md
