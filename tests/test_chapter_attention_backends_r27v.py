"""Section attention_backends-xformers-memory-efficient: ViT-B/16 at 224x224 (Dosovitskiy et al., Table 1),
the activations one layer keeps in 16-bit training (Korthikanti et al. §4.1: 34 s h + 5 a s^2 bytes per
sequence), 16 bytes of model state per parameter (ZeRO §3.1), recomputed here from the formulas."""
import json
import pathlib
import re

NB = pathlib.Path(__file__).parents[1] / "book" / "attention_backends.ipynb"
D, HEADS, LAYERS, FF, PATCH, IMAGE, CLASSES = 768, 12, 12, 3072, 16, 224, 1000


def _stored():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if "cross_p = 34" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _layer(s, scores=True):
    return 34 * s * D + (5 * HEADS * s * s if scores else 0)


def test_tokens_and_parameters():
    tokens = (IMAGE // PATCH) ** 2 + 1
    assert tokens == 197
    # per block: 12 d^2 weights plus biases (QKV 3d, O d, MLP 4d + d) and two norms (4d)
    block = 12 * D * D + 13 * D
    params = LAYERS * block + 3 * PATCH * PATCH * D + D + D + tokens * D + 2 * D + CLASSES * D + CLASSES
    out = _stored()
    assert f"tokens {tokens}, parameters {params / 1e6:.1f} M" in out
    assert 86e6 < params < 87e6  # "ViT-Base ... 86M", Table 1
    assert f"model states {16 * params / 2**30:.2f} GiB" in out


def test_score_share_and_batch_gain():
    s = 197
    full, fused = LAYERS * _layer(s), LAYERS * _layer(s, scores=False)
    out = _stored()
    assert f"score-sized {(full - fused) / 2**20:.1f} MiB ({(full - fused) / full:.0%})" in out
    assert f"grows by about {full / fused:.2f}x" in out
    assert abs(full / fused - 110 / 75) < 0.05  # the asker's measurement
    p_only = LAYERS * 2 * HEADS * s * s
    assert f"only P kept): {(fused + p_only) / fused:.2f}x" in out


def test_crossover_is_exact():
    out = _stored()
    m = re.search(r"outweigh the rest from (\d+) tokens \((\d+) with P alone\)", out)
    cross, cross_p = int(m.group(1)), int(m.group(2))
    assert 5 * HEADS * cross > 34 * D and not 5 * HEADS * (cross - 1) > 34 * D
    assert 2 * HEADS * cross_p > 34 * D and not 2 * HEADS * (cross_p - 1) > 34 * D
    assert (cross, cross_p) == (436, 1089)
    for s in (577, 1025, 4097):
        f, g = _layer(s), _layer(s, scores=False)
        assert f"{s:>5} tokens: score share {(f - g) / f:.0%}, fused-kernel batch gain {f / g:.2f}x" in out


def test_fixed_memory_cancels_and_predicted_batch():
    s, out = 197, _stored()
    full, fused = LAYERS * _layer(s), LAYERS * _layer(s, scores=False)
    block = 12 * D * D + 13 * D
    params = LAYERS * block + 3 * PATCH * PATCH * D + D + D + s * D + 2 * D + CLASSES * D + CLASSES
    states, gpu = 16 * params, 16 * 2**30
    for extra in (0, 1.5e9, 3e9):  # the ratio of batches does not depend on the fixed memory
        r = ((gpu - states - extra) / fused) / ((gpu - states - extra) / full)
        assert abs(r - (1 + 5 * HEADS * s / (34 * D))) < 1e-12
        assert f"fixed memory + {extra / 1e9:.1f} GB: ratio {r:.4f}" in out
    b_full, b_fused = (gpu - states) / full, (gpu - states) / fused
    assert f"predicted batch in 16 GiB: {b_full:.0f} standard, {b_fused:.0f} fused (measured 75 and 110)" in out
    assert f"about {b_full / 75:.1f}x the count" in out
    assert b_full > 2 * 75 and b_fused > 2 * 110  # the count underestimates real bytes per image about 2x


def test_autocast_softmax_copies_and_flop_share():
    s, out = 197, _stored()
    fused = LAYERS * _layer(s, scores=False)
    amp = (fused + LAYERS * 6 * HEADS * s * s) / fused  # fp32 softmax output (4 B) + fp16 copy (2 B)
    assert f"(fp32 P + fp16 copy, 6as^2): {amp:.2f}x" in out
    assert amp > 110 / 75 > (fused + LAYERS * 2 * HEADS * s * s) / fused
    assert f"32sh + 5as^2: {1 + 5 * HEADS * s / (32 * D):.2f}x" in out
    share = (2 * s * D + 2 * s * D) / (2 * (3 * D * D + D * D + 2 * D * FF))  # QK^T + PV against QKV, O, MLP
    assert f"attention matmuls against the dense layers: {share:.1%}" in out
