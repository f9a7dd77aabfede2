"""Section softmax_numerics-adaptive-softmax: the FLOPs of Llama 3 8B's output layer against an adaptive softmax
with the example cutoffs [8192, 32768], recomputed in plain Python without mha_kit.

Shapes: Llama 3 8B, d = 4096, V = 128,256 (config.json). The adaptive layer follows PyTorch's
AdaptiveLogSoftmaxWithLoss.__init__ (head_size = shortlist + n_clusters; tail i is d -> floor(d / 4**i) -> cluster
size) and the paper's reference code (utils/AdaptiveSoftMax.lua). Zipf's law with exponent 1 gives token k the mass
(1/k) / H_V. The model's weight-matrix FLOPs count every matrix but the input table (Llama layout, untied head)."""
import math

import chapter_outputs

NB = chapter_outputs.notebook("softmax_numerics")
LABEL = "softmax_numerics-adaptive-softmax"
MARKER = "# adaptive softmax against the full output layer"
D, V = 4096, 128_256
CUTOFFS = [8192, 32768]
LAYERS, KV_DIM, FFN = 32, 8 * 128, 14_336  # Llama 3 8B: 32 layers, 8 KV heads of 128, FFN width 14,336


def flops():
    bounds = CUTOFFS + [V]
    head = 2 * D * (CUTOFFS[0] + 2)
    tails = [2 * (D * (D // 4 ** (i + 1)) + (D // 4 ** (i + 1)) * (bounds[i + 1] - bounds[i])) for i in range(2)]
    return 2 * D * V, head, tails


def harmonic(n):
    return math.fsum(1.0 / k for k in range(1, n + 1))


def test_exact_flop_counts():
    full, head, tails = flops()
    assert (full, head, tails) == (1_050_673_152, 67_125_248, [58_720_256, 50_987_008])
    out = chapter_outputs.printed(NB, MARKER)
    assert f"d = 4,096 x V = 128,256: {full / 1e6:,.1f} MFLOP a token" in out
    assert f"adaptive head: 8,192 + 2 logits: {head / 1e6:,.1f} MFLOP" in out
    assert f"tail cluster 1: 24,576 tokens through rank 1,024: {tails[0] / 1e6:,.1f} MFLOP" in out
    assert f"tail cluster 2: 95,488 tokens through rank 256: {tails[1] / 1e6:,.1f} MFLOP" in out
    every = head + sum(tails)
    assert f"{every / 1e6:,.1f} MFLOP, FLOP ratio {full / every:.1f}x against full" in out
    assert chapter_outputs.glued(NB, "as_every_x") == f"{full / every:.1f}" == "5.9"


def test_zipf_expected_cost():
    full, head, tails = flops()
    h_v = harmonic(V)
    mass = [harmonic(8192) / h_v, (harmonic(32768) - harmonic(8192)) / h_v, (h_v - harmonic(32768)) / h_v]
    expected = head + mass[1] * tails[0] + mass[2] * tails[1]
    out = chapter_outputs.printed(NB, MARKER)
    assert f"Zipf mass: shortlist {mass[0]:.1%}; clusters {mass[1]:.1%}, {mass[2]:.1%}" in out
    assert f"{expected / 1e6:,.1f} MFLOP, FLOP ratio {full / expected:.1f}x against full" in out
    assert chapter_outputs.glued(NB, "as_train_x") == f"{full / expected:.1f}"
    assert chapter_outputs.glued(NB, "as_zipf_head") == f"{mass[0]:.0%}"
    # Zipf-1 against FR-Spec's measured Llama 3 coverage of the top quarter (about 95%, frspec §3)
    quarter = harmonic(32768) / h_v
    assert chapter_outputs.glued(NB, "as_zipf_quarter") == f"{quarter:.1%}" == "88.9%"
    assert chapter_outputs.glued(NB, "as_frspec_cover") == "95%"
    assert quarter < 0.95  # Zipf-1 is less concentrated than the measured distribution: the ratio is conservative


def test_share_of_the_model():
    full, head, tails = flops()
    layer = 2 * D * D + 2 * D * KV_DIM + 3 * D * FFN + 2 * D  # q, o; k, v; gate, up, down; two norms
    matrices = LAYERS * layer + D + V * D  # the final norm and the untied output layer; no input table
    assert matrices + V * D == 8_030_261_248  # Llama 3 8B's parameter count
    share, saving = full / (2 * matrices), (full - head - sum(tails)) / (2 * matrices)
    assert chapter_outputs.glued(NB, "as_head_share") == f"{share:.1%}"
    assert chapter_outputs.glued(NB, "as_every_saving") == f"{saving:.1%}"
    assert chapter_outputs.glued(NB, "as_head_gb") == f"{V * D * 2 / 1e9:.2f}"
    assert 0.05 < share < 0.08  # the output layer is a small share at a 128K vocabulary


def test_section_cites_links_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="## Precision: where bfloat16 loses probability mass")
    chapter_outputs.assert_cited(text, ["grave2017adaptive", "pytorchadaptivesoftmax", "adaptivesoftmaxcode"])
    for ref in ("decoding_sampling-large-vocab-loss", "decoding_sampling-logits-to-token",
                "softmax_numerics-cross-entropy-gradient", "decoding_sampling-vocab-trimming"):
        assert f"{{ref}}`{ref}`" in text and ref in chapter_outputs.book_labels(), ref
    assert "p(w \\mid h) = p(c \\mid h)\\; p(w \\mid c, h)" in text
    assert "{admonition} In the interview" in text and text.count(":class: dropdown") == 2
    assert "an example chosen for this page" in text and "Zipf" in text
    chapter_outputs.assert_cited(text, ["qa_dlawesome", "frspec"])
    assert "FLOP ratios, not GPU" in text and "does not quote the paper's per-data-set speed-ups" in text
