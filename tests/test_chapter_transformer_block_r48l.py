"""Sections transformer_block-vanishing-gradients, -layer-sharing and -large-vocab of "The block around attention".

Recomputed without mha_kit and without the chapter's functions: the sigmoid's derivative bound 1/4 and 0.25^L;
a 20-layer random ReLU/sigmoid stack under He (2/fan_in) and Glorot (2/(fan_in + fan_out)) scales, the formulas of
torch.nn.init's kaiming_normal_ and xavier_normal_; BERT-base from BertConfig's defaults (vocabulary 30,522, 12 layers
of 768, FFN 3,072, 512 positions, 2 segment types) and ALBERT-base from google-research/albert (E = 128, one shared
layer, SentencePiece vocabulary 30,000); MobileLLM-125M from its configs/125M/config.json (576, 30 layers, 9 heads,
3 KV heads, 1,536, vocabulary 32,000), with LS running each block twice; ALBERT's V x E + E x H for V = 100,000,
H = 4,096.
"""
import math

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("transformer_block")
VANISH = chapter_outputs.section(NB, "transformer_block-vanishing-gradients", end="transformer_block-dropout")
SHARE = chapter_outputs.section(NB, "transformer_block-layer-sharing", end="transformer_block-large-vocab")
VOCAB = chapter_outputs.section(NB, "transformer_block-large-vocab", end="transformer_block-norm-kernel")


def g(key):
    return chapter_outputs.glued(NB, key)


def test_sigmoid_bound_and_saturation():
    out = chapter_outputs.printed(NB, "z_grid = np.linspace(-6, 6, 1201)")
    assert "largest derivative: sigmoid 0.250, tanh 1.000 (both at z = 0)" in out
    assert g("tb_vg_pow10") == "1 in 1,048,576" and 0.25 ** 10 * 1_048_576 == 1.0
    assert g("tb_vg_pow20") == "1 in 1,099,511,627,776" and 0.25 ** 20 * 1_099_511_627_776 == 1.0
    s5 = 1 / (1 + math.exp(-5))
    assert g("tb_vg_sat5") == f"{s5 * (1 - s5):.4f}" == "0.0066"
    assert f"ELU (alpha 1) e^z = {math.exp(-3):.3f}" in out


def _stack(activation, std, width=256, batch=64, depth=20):
    x = np.random.default_rng(48).standard_normal((batch, width))
    mats = np.random.default_rng(49).standard_normal((depth, width, width)) * std  # drawn in the same order
    zs = []
    for w in mats:
        zs.append(x @ w)
        x = np.maximum(zs[-1], 0.0) if activation == "relu" else 0.5 * (1 + np.tanh(zs[-1] / 2))
    delta = np.random.default_rng(50).standard_normal((batch, width))
    norms = [0.0] * depth
    for layer in range(depth - 1, -1, -1):
        if activation == "relu":
            local = (zs[layer] > 0).astype(float)
        else:
            s = 0.5 * (1 + np.tanh(zs[layer] / 2))
            local = s * (1 - s)
        delta = (delta * local) @ mats[layer].T
        norms[layer] = float(np.sqrt((delta ** 2).sum()))
    return [float(z.var()) for z in zs], norms


def test_init_stacks():
    n = 256
    he_var, he_grad = _stack("relu", math.sqrt(2 / n))
    gl_var, _ = _stack("relu", math.sqrt(2 / (n + n)))
    small_var, small_grad = _stack("relu", 0.01)
    _, sig_grad = _stack("sigmoid", math.sqrt(2 / (n + n)))
    assert g("tb_vg_he_var1") == f"{he_var[0]:.2f}" and g("tb_vg_he_var20") == f"{he_var[19]:.2f}"
    assert 1.0 < he_var[19] < 5.0  # of order one after 20 layers: no decay
    assert g("tb_vg_glorot_var20") == f"{gl_var[19]:.1e}"
    assert 0.5 ** 19 / 3 < gl_var[19] < 3 * 0.5 ** 19  # Glorot's 1/n halves a ReLU stack per layer
    assert g("tb_vg_small_orders") == f"{-math.log10(small_var[19]):.0f}" and small_var[19] < 1e-30
    assert g("tb_vg_he_gratio") == f"{he_grad[0] / he_grad[19]:.2f}" and 0.5 < he_grad[0] / he_grad[19] < 2
    assert g("tb_vg_small_gorders") == f"{math.log10(small_grad[19] / small_grad[0]):.0f}"
    assert g("tb_vg_sig_gorders") == f"{math.log10(sig_grad[19] / sig_grad[0]):.0f}" and sig_grad[0] / sig_grad[19] < 1e-8
    table = chapter_outputs.printed(NB, "width, batch, depth = 256, 64, 20")
    row = next(line for line in table.splitlines() if line.startswith("ReLU, He 2/n_in"))
    assert row.split()[-6:] == [f"{math.log10(v):.1f}" for v in (he_var[0], he_var[9], he_var[19],
                                                                     he_grad[19], he_grad[9], he_grad[0])]


def _bert_like(vocab, emb, stored, hidden=768, ff=3072):
    word, pos, seg, emb_ln = vocab * emb, 512 * emb, 2 * emb, 2 * emb
    proj = (emb * hidden + hidden) if emb != hidden else 0
    attn = 4 * hidden * hidden + 4 * hidden
    ffn = hidden * ff + ff + ff * hidden + hidden
    lns = 4 * hidden
    pooler = hidden * hidden + hidden
    return word + pos + seg + emb_ln + proj + stored * (attn + ffn + lns) + pooler


def test_albert_against_bert():
    bert, albert = _bert_like(30_522, 768, 12), _bert_like(30_000, 128, 1)
    assert bert == 109_482_240  # bert-base-uncased's well-known count with the pooler
    assert albert == 11_683_584
    assert g("tb_ls_bert") == "109.5M" and g("tb_ls_albert") == "11.7M"
    assert g("tb_ls_albert_ratio") == f"{bert / albert:.1f}" == "9.4"


def test_mobilellm_sharing():
    d, heads, kv, hd, ff, vocab = 576, 9, 3, 64, 1536, 32_000
    block = d * heads * hd + d * kv * hd * 2 + heads * hd * d + d * ff * 3 + d * 2
    assert block == 3_540_096 and g("tb_ls_block") == "3,540,096"
    out = chapter_outputs.printed(NB, "VARIANTS = {")
    for name, stored, run in (("MobileLLM-125M", 30, 30), ("MobileLLM-LS-125M (each block twice)", 30, 60),
                              ("unshared, 60 blocks", 60, 60)):
        params = stored * block + vocab * d + d
        flops = 2 * (run * block + vocab * d)
        kv_bytes = run * 2 * kv * hd * 2
        row = next(line for line in out.splitlines() if line.startswith(name))
        cells = row[len(name):].split()
        assert cells == [f"{params:,}", f"{params * 2 / 1e6:.0f}", f"{flops / 1e9:.3f}", f"{kv_bytes:,}"], name
    assert g("tb_ls_params") == "124.6M" and g("tb_ls_deep_params") == "230.8M"
    assert g("tb_ls_kv") == "46,080" and g("tb_ls_flops") == "0.462"


def test_factorized_embedding():
    V, H = 100_000, 4_096
    assert V * H == 409_600_000 and g("tb_lv_full") == "409.6M"
    for E, total, ratio in ((128, 13_324_288, "31"), (512, 53_297_152, "8")):
        assert V * E + E * H == total
        assert g(f"tb_lv_fact{E}") == f"{total / 1e6:.1f}M" and g(f"tb_lv_ratio{E}") == ratio
    assert g("tb_lv_head_gflop") == "0.82" and g("tb_lv_share8b") == "5.1%"


def test_links_citations_and_boxes():
    for text in (VANISH, SHARE, VOCAB):
        assert text.count("```{admonition} In the interview") == 1
        assert text.count(":class: dropdown\n") == 1
        assert text.count("**Strong answer.**") == text.count("**Listening for.**") == text.count("**Trap.**") == 1
    for label in ("transformer_block-residuals", "transformer_block-pre-post-norm", "transformer_block-deepnorm",
                  "why_attention-rnn-gradients"):
        assert f"{{ref}}`{label}`" in VANISH
    assert "pytorchnninit{xavier_normal_, kaiming_normal_}" in VANISH
    for label in ("follow_up_questions-gqa-mqa", "tree_attention-cross-layer", "beyond_kv_cache-cross-layer"):
        assert f"{{ref}}`{label}`" in SHARE
    for key in ("albertcode{", "hfalbertcollection", "hfalbertdoc{Usage tips}", "dehghani2019universal{",
                "mobilellmrepo{", "hfbertconfig{"):
        assert key in SHARE
    for label in ("decoding_sampling-vocab-trimming", "decoding_sampling-large-vocab-loss",
                  "decoding_sampling-logits-oom", "softmax_numerics-adaptive-softmax", "transformer_block-weight-tying"):
        assert f"{{ref}}`{label}`" in VOCAB
