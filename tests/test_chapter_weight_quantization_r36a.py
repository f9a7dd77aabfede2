"""Section weight_quantization-llm-vs-cnn: FLOPs per weight, bytes and the share INT4 weights remove, for the
3 x 3 layer of cuda_basics-convolution, ResNet-50 (He et al. 2016, Table 1) and a Llama 3 8B decode step
(config.json), recomputed here from the layer shapes, and compared with the chapter's stored table."""
import chapter_outputs
import pytest

NB = chapter_outputs.notebook("weight_quantization")
INT4_BITS = 4 + (16 + 16) / 128  # group of 128 weights sharing an fp16 scale and an fp16 zero point
H100_BYTES, H100_BW, H100_BF16 = 80e9, 3.35e12, 989e12  # NVIDIA H100 SXM datasheet


def _conv(images, h_in, h_out, c_in, c_out, k):
    macs = images * h_out * h_out * c_out * c_in * k * k  # one multiply-add per weight per output position
    return 2 * macs, c_out * c_in * k * k, images * (h_in * h_in * c_in + h_out * h_out * c_out)


def _resnet50_layers():
    # He et al. Table 1, 50-layer column: stem 7x7/2, max-pool, then bottlenecks [1x1, 3x3, 1x1 (x4)] x (3, 4, 6, 3)
    out, h, c = [(224, 112, 3, 64, 7)], 56, 64
    for stage, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
        for b in range(blocks):
            stride = 2 if stage and not b else 1
            ho = h // stride
            out.append((h, h, c, width, 1))
            out.append((h, ho, width, width, 3))
            out.append((ho, ho, width, width * 4, 1))
            if not b:
                out.append((h, ho, c, width * 4, 1))
            h, c = ho, width * 4
    return out


def _resnet50(images):
    totals = [0, 0, 0]
    for layer in _resnet50_layers():
        for i, v in enumerate(_conv(images, *layer)):
            totals[i] += v
    totals[0] += 2 * images * 2048 * 1000  # the fully connected classifier
    totals[1] += 2048 * 1000
    totals[2] += images * (2048 + 1000)
    return tuple(totals)


def _llama3_8b_decode(batch):
    d, q, kv, ff, layers, vocab = 4096, 32 * 128, 8 * 128, 14336, 32, 128256  # Llama 3 8B config.json
    per_layer = [(d, q), (d, kv), (d, kv), (q, d), (d, ff), (d, ff), (ff, d)]
    weights = layers * sum(a * b for a, b in per_layer) + d * vocab
    acts = batch * (layers * sum(a + b for a, b in per_layer) + d + vocab)
    return 2 * batch * weights, weights, acts


def _row(name, counts):
    flops, weights, acts = counts
    total = 2 * (weights + acts)
    cut = weights * (16 - INT4_BITS) / 8 / total
    return (f"{name:<36}{flops / 1e9:>9.3f}{total / 1e6:>10.2f}{flops / weights:>12,.0f}{flops / total:>8.1f}"
            f"{2 * weights / total:>9.1%}{cut:>11.1%}")


def _cell_lines(marker):
    return chapter_outputs.printed(NB, marker).strip().splitlines()


def _cut(counts, kv=0):
    """The share of a step's 16-bit bytes (weights, activations and any KV cache) that 4.25-bit weights remove."""
    flops, weights, acts = counts
    return weights * (16 - INT4_BITS) / 8 / (2 * (weights + acts) + kv)


KV_TOKEN = 2 * 32 * 8 * 128 * 2  # Llama 3 8B: K and V, 32 layers, 8 KV heads of 128, 2 bytes


def _kv_batch32(ctx):
    return 32 * ctx * KV_TOKEN


def test_resnet50_weight_count_matches_torchvision():
    # torchvision's resnet50 has 25,557,032 parameters: conv and fc weights, the fc bias, and 2 per BN channel
    bn = 2 * sum(layer[3] for layer in _resnet50_layers())
    assert _resnet50(1)[1] == 25_557_032 - 1000 - bn
    assert len(_resnet50_layers()) == 53


def test_book_layer_exact_counts():
    flops, weights, acts = _conv(1, 56, 56, 64, 64, 3)
    assert (flops, weights, acts) == (231_211_008, 36_864, 200_704 + 200_704)  # unpadded input  # GEMM 3,136 x 64 x 576


def test_stored_table():
    lines = _cell_lines("def resnet50_convs(")
    assert lines[1:6] == [
        _row("the 3x3 conv of cuda_basics, 1 image", _conv(1, 56, 56, 64, 64, 3)),
        _row("ResNet-50, 1 image", _resnet50(1)),
        _row("ResNet-50, 32 images", _resnet50(32)),
        _row("Llama 3 8B decode step, batch 1", _llama3_8b_decode(1)),
        _row("Llama 3 8B decode step, batch 32", _llama3_8b_decode(32)),
    ]
    assert lines[6].startswith(f"H100 SXM ridge point: {H100_BF16 / H100_BW:.0f} FLOP/B")
    flops = _resnet50(1)[0]
    assert lines[7] == f"ResNet-50 (stride in the 3 x 3): {flops / 1e9:.2f} GFLOP = {flops / 2e9:.2f} G multiply-adds"
    _, weights, acts = _llama3_8b_decode(32)
    kv_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, 2 bytes
    assert kv_token == 128 * 1024
    assert len(lines) >= 11  # so that the zip below checks all three context lines
    for line, ctx in zip(lines[8:11], (1024, 4096, 8192)):
        kv = 32 * ctx * kv_token
        cut = weights * (16 - INT4_BITS) / 8 / (2 * (weights + acts) + kv)
        assert line == (f"batch 32 x {ctx:>5,} tokens: KV cache {kv / 1e9:5.1f} GB against {2 * weights / 1e9:.1f} GB "
                        f"of weights; W4A16 cuts {cut:.0%}")


def test_kv_cache_shrinks_the_int4_cut():
    # at 4,096 tokens the batch-32 cache outweighs the weights, and INT4 weights remove about a third
    dec32 = _llama3_8b_decode(32)
    assert _kv_batch32(4096) > 2 * dec32[1]
    assert 0.30 < _cut(dec32, _kv_batch32(4096)) < 0.37
    # the prose's cache paragraph is written with these glued values: read them against the recomputation
    for ctx, key in ((1024, "wq_cnn_kv1k_cut"), (4096, "wq_cnn_kv4k_cut"), (8192, "wq_cnn_kv8k_cut")):
        assert chapter_outputs.glued(NB, key) == f"{_cut(dec32, _kv_batch32(ctx)):.0%}", key
    assert chapter_outputs.glued(NB, "wq_cnn_kv_kib") == f"{KV_TOKEN // 1024}"
    assert chapter_outputs.glued(NB, "wq_cnn_kv4k_gb") == f"{_kv_batch32(4096) / 1e9:.0f}"
    assert chapter_outputs.glued(NB, "wq_cnn_w8b_gb") == f"{2 * dec32[1] / 1e9:.0f}"


@pytest.mark.parametrize("counts, low, high, key, fmt", [
    (_conv(1, 56, 56, 64, 64, 3), 0.05, 0.07, "wq_cnn_layer_cut", ".0%"),  # the layer: about 6% of its bytes
    (_resnet50(32), 0.02, 0.03, "wq_cnn_r50b32_cut", ".1%"),  # batched ResNet-50: under 3%
    (_llama3_8b_decode(1), 0.73, 0.74, "wq_cnn_dec_cut", ".0%"),  # decode: 1 - 4.25/16 of nearly all bytes
])
def test_int4_cut_brackets(counts, low, high, key, fmt):
    assert low < _cut(counts) < high
    assert chapter_outputs.glued(NB, key) == format(_cut(counts), fmt)


def test_every_glued_value():
    """Every wq_cnn_* value the section's prose is written with, against this file's recomputation."""
    layer, r50, r50b32 = _conv(1, 56, 56, 64, 64, 3), _resnet50(1), _resnet50(32)
    dec1, dec32 = _llama3_8b_decode(1), _llama3_8b_decode(32)

    def per_byte(counts):
        return counts[0] / (2 * (counts[1] + counts[2]))

    def wshare(counts):
        return counts[1] / (counts[1] + counts[2])

    d, q, kv, ff, layers, vocab = 8192, 64 * 128, 8 * 128, 28672, 80, 128256  # Llama 3 70B config.json
    p70 = layers * (2 * d * q + 2 * d * kv + 3 * d * ff + 2 * d) + 2 * vocab * d + d
    want = {
        "wq_cnn_layer_flop_b": f"{per_byte(layer):.0f}", "wq_cnn_layer_wshare": f"{wshare(layer):.0%}",
        "wq_cnn_layer_cut": f"{_cut(layer):.0%}", "wq_cnn_layer_reuse": f"{layer[0] / layer[1]:,.0f}",
        "wq_cnn_r50_reuse": f"{r50[0] / r50[1]:.0f}", "wq_cnn_r50_wshare": f"{wshare(r50):.0%}",
        "wq_cnn_r50_cut": f"{_cut(r50):.0%}", "wq_cnn_r50_flop_b": f"{per_byte(r50):.0f}",
        "wq_cnn_r50b32_wshare": f"{wshare(r50b32):.1%}", "wq_cnn_r50b32_cut": f"{_cut(r50b32):.1%}",
        "wq_cnn_dec_cut": f"{_cut(dec1):.0%}", "wq_cnn_dec32_cut": f"{_cut(dec32):.0%}",
        "wq_cnn_r50_gmac": f"{r50[0] / 2e9:.1f}", "wq_cnn_r50_gflop": f"{r50[0] / 1e9:.1f}",
        "wq_cnn_kv_kib": f"{KV_TOKEN // 1024}", "wq_cnn_kv4k_gb": f"{_kv_batch32(4096) / 1e9:.0f}",
        "wq_cnn_w8b_gb": f"{2 * dec32[1] / 1e9:.0f}", "wq_cnn_kv4k_cut": f"{_cut(dec32, _kv_batch32(4096)):.0%}",
        "wq_cnn_kv1k_cut": f"{_cut(dec32, _kv_batch32(1024)):.0%}",
        "wq_cnn_kv8k_cut": f"{_cut(dec32, _kv_batch32(8192)):.0%}",
        "wq_cnn_ridge": f"{H100_BF16 / H100_BW:.0f}",
        "wq_cnn_r50_m": f"{r50[1] / 1e6:.1f}", "wq_cnn_r50_mb32": f"{4 * r50[1] / 1e6:.0f}",
        "wq_cnn_70b_gpus": f"{2 * p70 / H100_BYTES:.2f}",
    }
    got = {**chapter_outputs.cell_glue(NB, "def resnet50_convs("), **chapter_outputs.cell_glue(NB, "r50_weights = ")}
    assert got == want  # every key the two cells glue, and no other, with the recomputed text


def test_fit_lines():
    # Llama 3 70B config.json: every weight, untied embeddings, RMSNorm vectors
    d, q, kv, ff, layers, vocab = 8192, 64 * 128, 8 * 128, 28672, 80, 128256
    p70 = layers * (2 * d * q + 2 * d * kv + 3 * d * ff + 2 * d) + 2 * vocab * d + d
    r50 = _resnet50(1)[1]
    assert _cell_lines("r50_weights = ")[:2] == [
        f"ResNet-50: {r50 / 1e6:.1f} M weights, {4 * r50 / 1e6:.0f} MB in fp32, {r50 / 1e6:.1f} MB in int8",
        f"Llama 3 70B: {p70 / 1e9:.1f} B weights, {2 * p70 / 1e9:.1f} GB in bf16 against one H100's "
        f"{H100_BYTES / 1e9:.0f} GB: {2 * p70 / H100_BYTES:.2f} H100s for the weights alone",
    ]
    assert 2 * p70 > H100_BYTES and 4 * r50 < 1e9
