"""Padding shares quoted in attention_backends-accelerator-gap, worked by hand."""
import mha_kit as mk


def test_head_dim_padding_share():
    assert mk.MODEL_FACTS["falcon-7b"].config.head_dim == 64
    assert 64 / 128 == 0.5  # a 64-wide head on a 128-wide matrix unit
    assert mk.MODEL_FACTS["llama-3-8b"].config.head_dim % 128 == 0


def test_token_buckets():
    buckets = [16 * 2**i for i in range(8)]  # vLLM TPU runner: 16 ... 2048
    assert buckets[-1] == 2048
    assert min(b for b in buckets if b >= 129) == 256
    assert min(b for b in buckets if b >= 1100) == 2048
    assert round(129 / 256, 2) == 0.5
