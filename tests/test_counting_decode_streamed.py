"""decode_streamed_params: the parameters a batch-1 decode step streams (all but the input embedding table)."""
import pytest

import mha_kit as mk


def test_llama3_8b_by_hand():
    # 32 layers; Q and O 4096 x 4096, K and V 4096 x 1024 (8 KV heads of 128); SwiGLU 3 x 4096 x 14336;
    # two RMSNorm vectors per layer, one final norm, an untied 128,256 x 4,096 output head.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    streamed = 32 * per_layer + 4096 + 128_256 * 4096
    assert streamed == 7_504_924_672
    assert mk.decode_streamed_params(mk.MODEL_FACTS["llama-3-8b"]) == streamed


def test_the_gap_is_exactly_the_input_table():
    for name in ("llama-3-8b", "llama-3-70b"):
        facts = mk.MODEL_FACTS[name]
        gap = mk.dense_decoder_params(facts) - mk.decode_streamed_params(facts)
        assert gap == facts.vocab_size * facts.config.d_model


def test_records_it_cannot_count():
    with pytest.raises(ValueError, match="ModelFacts"):
        mk.decode_streamed_params("llama-3-8b")
    moe = next(f for f in mk.MODEL_FACTS.values() if f.param_layout != "llama")
    with pytest.raises(ValueError, match="param_layout"):
        mk.decode_streamed_params(moe)
