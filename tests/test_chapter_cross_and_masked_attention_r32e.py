"""Sections cross_and_masked_attention-which-family and cross_and_masked_attention-encoder-is-causal.

The first: attention scores per layer for a 400-token source translated into a 400-token target, an
encoder-decoder (bidirectional encoder self-attention, causal decoder self-attention, cross-attention to
every source key) against one causal pass over the 800-token concatenation, with the base Transformer's
h = 8, d_h = 64 (Vaswani et al., Table 3), and the bf16 KV cache per generated token (2 * d * layers * 2 B).
The second: which pattern one TransformerEncoderLayer applies for a given src_mask, is_causal hint,
key_padding_mask and fast path, as read in torch 2.13.0 (transformer.py, functional.py), and the rows a
wrong hint changes for a two-token window. Recomputed here from the formulas, without mha_kit, and compared
with the chapter's stored outputs."""
import json
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "cross_and_masked_attention.ipynb"
H, D_H, D, SRC, TGT = 8, 64, 512, 400, 400


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stored(marker):
    cell = next(c for c in _cells() if c["cell_type"] == "code" and marker in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _triangle(n):  # visible entries of an n x n causal mask
    return n * (n + 1) // 2


def test_score_counts():
    out = _stored("fam_cfg = ")
    enc, dec_self, cross = H * SRC * SRC, H * _triangle(TGT), H * TGT * SRC
    joint = H * _triangle(SRC + TGT)
    assert (enc, dec_self, cross, joint) == (1_280_000, 641_600, 1_280_000, 2_563_200)
    assert f"scores {enc:>9,}" in out and f"scores {dec_self:>9,}" in out
    ed = enc + dec_self + cross
    assert f"{ed:>9,}  MACs {2 * D_H * ed:>12,}" in out
    assert f"scores {joint:>9,}  MACs {2 * D_H * joint:>12,}" in out
    # the target rows match: 400 x 400 cross plus the causal target triangle, shifted by 400 source keys
    assert sum(SRC + i + 1 for i in range(TGT)) == SRC * TGT + _triangle(TGT)
    assert "target rows: same scores in both: True" in out
    assert f"bidirectional {SRC * SRC:,} against causal {_triangle(SRC):,} per head" in out
    assert ed - joint == H * (SRC * SRC - _triangle(SRC))  # the whole difference is the source's upper triangle


def test_kv_cache():
    out = _stored("fam_cfg = ")
    per_layer = 2 * D * 2  # K and V, d each, bf16
    ed_step, do_step = 6 * per_layer, 12 * per_layer
    assert f"encoder-decoder {ed_step:,} B, decoder-only {do_step:,} B" in out
    assert f"cross K/V {SRC * ed_step:,} B (computed once), decoder-only {SRC * do_step:,} B" in out


def test_two_matchings():
    """T5 section 3.2.2: L + L layers have the compute of an L-layer LM and the parameters of a 2L-layer one."""
    out = _stored("fam_cfg = ")
    ed_pair = H * (SRC * SRC + _triangle(TGT) + TGT * SRC)  # one encoder plus one decoder layer
    joint = H * _triangle(SRC + TGT)
    ed_all, do_all = 6 * ed_pair, 12 * joint
    assert (ed_all, do_all) == (19_209_600, 30_758_400)
    assert do_all > ed_all  # at equal parameters the comparison reverses
    assert f"encoder-decoder {ed_all:,} scores, decoder-only {do_all:,} ({do_all / ed_all:.2f}x)" in out
    per_layer = 2 * D * 2
    assert f"KV cache per token {6 * per_layer:,} B against {6 * per_layer:,} B, " \
           f"source {SRC * 6 * per_layer:,} B against {SRC * 6 * per_layer:,} B" in out
    text = "".join("".join(c["source"]) for c in _cells() if c["cell_type"] == "markdown")
    fam = text[text.index("(cross_and_masked_attention-which-family)="):text.index("(cross_and_masked_attention-bert-mask)=")]
    assert "raffel2020t5{§3.2.2}" in fam and "equal compute" in fam and "equal parameters" in fam
    assert "still wins" not in fam and "Per layer the" not in fam


def _applied(has_mask, hint, padding, fast):  # the rule, restated from the torch 2.13.0 source
    if fast:
        return "src_mask" if has_mask else "none (bidirectional)"
    if hint and not has_mask:
        return "RuntimeError: Need attn_mask"
    if hint and not padding:
        return "causal (src_mask not read)"
    return "src_mask" if has_mask else "none (bidirectional)"


def test_hint_table():
    out = _stored("def encoder_mask_applied(")
    n = 5
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    window = (j <= i) & (j >= i - 1)
    assert "window mask (True = may attend):\n " + str(window.astype(int)) in out
    for hint, pad, fast in [(False, None, False), (True, None, False), (True, "kpm", False),
                            (True, None, True), (None, None, False)]:
        detected = False if hint is None else hint  # a window is not the causal mask
        line = f"{str(hint):>9} {str(pad):>8} {str(fast):>9}  {_applied(True, detected, pad, fast)}"
        assert line in out
    assert "causal (src_mask not read)" in out
    assert "train(): RuntimeError: Need attn_mask | eval()+no_grad: none (bidirectional)" in out
    # rows whose visible keys differ between the window and the causal mask
    causal = j <= i
    changed = [r for r in range(n) if not np.array_equal(window[r], causal[r])]
    assert changed == [2, 3, 4]
    assert f"rows whose output a wrong hint changes: {changed} of {n}" in out


def test_prose_cites():
    text = "".join("".join(c["source"]) for c in _cells() if c["cell_type"] == "markdown")
    fam = text[text.index("(cross_and_masked_attention-which-family)="):text.index("(cross_and_masked_attention-bert-mask)=")]
    for key in ("devlin2019bert{§4.1–§4.4}", "devlin2019bert{§5.3}", "warner2024modernbert", "raffel2020t5",
                "radford2023whisper"):
        assert key in fam
    hint = text[text.index("(cross_and_masked_attention-encoder-is-causal)="):text.index("(cross_and_masked_attention-no-key)=")]
    assert "pytorch_transformer_py" in hint and "pytorch_mha_functional" in hint and "torch 2.13.0" in hint
    assert "_detect_is_causal_mask" in hint
    assert "autocast" in hint and "hardware SKU" in hint and "not allowed to attend" in hint
