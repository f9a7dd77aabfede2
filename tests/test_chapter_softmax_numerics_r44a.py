"""Section softmax_numerics-cross-entropy-gradient of "Softmax numerics in current models".

The gradient of L = -log softmax(z)_y is p - one_hot(y): recomputed here in plain Python (math.exp, no mk) on the
chapter's seeded logits, checked against central differences, summed over the vocabulary, and the bf16 bytes of
Llama 3's logits for 8,192 tokens that the in-place write saves.
"""
import math

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("softmax_numerics")
LABEL = "softmax_numerics-cross-entropy-gradient"
MARKER = "ce_grad = "
LLAMA3_VOCAB = 128_256  # Llama 3's tokenizer (config.json vocab_size)
BIB = (chapter_outputs.BOOK.parent / "references.bib").read_text(encoding="utf-8")


def loss(z, y):  # -z_y + log sum_j exp(z_j), with the max shift
    m = max(z)
    return -(z[y] - m) + math.log(sum(math.exp(v - m) for v in z))


def gradient(z, y):  # p - one_hot(y), by the two-line derivation
    m = max(z)
    e = [math.exp(v - m) for v in z]
    return [ei / sum(e) - (1.0 if i == y else 0.0) for i, ei in enumerate(e)]


def chapter_logits():
    return [float(v) for v in np.random.default_rng(44).normal(0.0, 3.0, 8)], 5  # the cell's draw


def test_gradient_printed():
    z, y = chapter_logits()
    g = gradient(z, y)
    out = chapter_outputs.printed(NB, MARKER)
    assert "p - one_hot(y): " + " ".join(f"{v:+.4f}" for v in g) in out
    assert f"loss {loss(z, y):.4f}, p_y = {g[y] + 1:.4f}" in out
    assert chapter_outputs.glued(NB, "ce_grad_y") == f"{g[y]:+.4f}"
    assert g[y] < 0 and all(v > 0 for i, v in enumerate(g) if i != y)


def test_central_differences_and_sum():
    z, y = chapter_logits()
    g, h = gradient(z, y), 1e-5
    fd = [(loss([v + h * (i == j) for j, v in enumerate(z)], y) - loss([v - h * (i == j) for j, v in enumerate(z)], y))
          / (2 * h) for i in range(8)]
    assert max(abs(a - b) for a, b in zip(g, fd)) < 1e-9
    assert abs(math.fsum(g)) < 1e-12
    out = chapter_outputs.printed(NB, MARKER)
    assert "largest difference: below 1e-09" in out and "sum over the vocabulary: below 1e-12" in out


def test_in_place_bytes():
    b = 8_192 * LLAMA3_VOCAB * 2  # bf16 logits, (tokens, V)
    assert b == 2_101_346_304
    out = chapter_outputs.printed(NB, MARKER)
    assert f"logits {b:,} bytes ({b / 2**30:.1f} GiB)" in out
    assert chapter_outputs.glued(NB, "ce_vocab") == f"{LLAMA3_VOCAB:,}"
    assert chapter_outputs.glued(NB, "ce_saved") == f"{b / 2**30:.1f} GiB" == "2.0 GiB"
    assert chapter_outputs.glued(NB, "ce_both") == f"{2 * b / 2**30:.1f} GiB" == "3.9 GiB"
    b32 = 8_192 * LLAMA3_VOCAB * 4  # the same (tokens, V) tensor in float32, as autocast's log_softmax
    assert chapter_outputs.glued(NB, "ce_fp32") == f"{b32 / 2**30:.1f} GiB" == "3.9 GiB"
    assert f"one (tokens, V) tensor in float32: {b32 / 2**30:.1f} GiB" in out


def test_upstream_gradient_is_one_number_per_token():
    text = chapter_outputs.section(NB, LABEL, end="softmax_numerics-adaptive-softmax")
    assert "upstream gradient is a scalar" not in text and "only rescales each stored row" in text
    assert "reduction='none'" in text and "grad_output.unsqueeze(dim=1)" in text
    assert "n_non_ignore" in text and "only one that is not positive" in text
    assert "no\nsecond" not in text and "the logits themselves still exist" in text


def test_section_placement_cites_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="softmax_numerics-adaptive-softmax")
    sources = ["".join(c["source"]) for c in NB["cells"]]
    log_softmax = next(i for i, s in enumerate(sources) if s.startswith("(softmax_numerics-log-softmax)="))
    here = next(i for i, s in enumerate(sources) if s.startswith(f"({LABEL})="))
    assert log_softmax < here and sources[here].split("\n")[1].startswith("### ")
    for ref in ("softmax_numerics-max-shift", "softmax_numerics-log-softmax", "decoding_sampling-large-vocab-loss"):
        assert f"{{ref}}`{ref}`" in text, ref
    for key in ("ligercrossentropycode", "pytorchcrossentropyloss", "hsu2024liger"):
        assert f"{{cite:p}}`{key}{{" in text and f"{{{key}," in BIB, key
    assert "p_i - \\mathbb{1}[i = y]" in text
    assert "{admonition} In the interview" in text and text.count(":class: dropdown") == 3
