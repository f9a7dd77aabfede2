"""Claims on a ROCm port (MI300X sizing), W4A16 on one H100, visual tokens and their cache, Ollama's slots, the
incremental detokenizer and the persistent batch, recomputed from written-out products, not from the notebooks."""
import mha_kit as mk


def test_rocm_port_sizing():
    p70 = mk.model_params(mk.MODEL_FACTS["llama-3-70b"])
    kv_token = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads, head 128, bf16
    assert 2 * p70 > 0.9 * 80e9  # Llama 3 70B in bf16 does not fit one H100
    tokens = (0.9 * 192e9 - 2 * p70) / kv_token
    assert 96_000 < tokens < 97_500  # "about 96,718 tokens of cache on one MI300X"
    assert 8 * 80e9 < 671e9 < 0.9 * 8 * 192e9  # DeepSeek-V3 FP8: not on 8 x H100, yes on 8 x MI300X


def test_w4a16_fits_one_h100():
    w70 = mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"])
    assert 36e9 < w70 * (4 + 16 / 128) / 8 < 37e9 < 80e9


def test_visual_tokens_and_cache():
    tokens_12 = 13 * (448 // 14 // 2) ** 2  # 12 tiles and a thumbnail, 256 tokens each
    assert tokens_12 == 3328
    qwen_kv = 2 * 28 * 4 * 128 * 2  # Qwen2.5-7B: 28 layers, 4 KV heads, head 128, bf16
    assert round(tokens_12 * qwen_kv / 2**20) == 182
    llama_kv = 2 * 32 * 8 * 128 * 2  # Llama 3 8B
    assert round(tokens_12 * llama_kv / 2**20) == 416


def test_ollama_slots_overflow_one_gpu():
    weights = 2 * mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-8b"])  # bf16 bytes read per token
    t_decode = 300 * weights / 3.35e12  # 300 tokens at batch 1, weights only: a lower bound (s)
    in_flight = 100 * t_decode  # Little's law at 100 requests/s
    reserved = in_flight * 8192 * 2 * 32 * 8 * 128 * 2  # full 8,192-token slots, bf16 cache
    assert in_flight > 140 and reserved > 80e9


def test_detokenizer_and_batch_claims():
    pieces = [b"caf", b"\xc3", b"\xa9", b" ", b"\xf0\x9f", b"\x98\x80", b"!"]
    assert "".join(mk.detokenize_stream(pieces)) == "café 😀!"
    upd = mk.persistent_batch_update(8, [1, 4, 6], num_new=1)
    assert upd.new_rows == [1] and len(upd.moves) == 1 and upd.num_rows == 6
