"""Section serving_reliability-on-device of "Overload, failures and rollouts": serving an LLM on a phone or a laptop.

Recomputed from Llama 3 8B's published shapes (meta-llama/llama-models: d=4096, 32 layers, FFN 14,336, 8 KV heads of
128, vocabulary 128,256, untied embeddings), llama.cpp's Q4_0 block (32 weights in 18 bytes), the section's assumed
phone bus (LPDDR5X-8533 on 64 bits), Apple's 400 GB/s for M2 Max, and LLM in a flash's 6 GiB/s sequential read and
OPT 6.7B shares (arXiv 2312.11514 §2.2, §4.1); none of it goes through mha_kit.
"""
import chapter_outputs
import pytest

NB = chapter_outputs.notebook("serving_reliability")
D, LAYERS, FFN, KV_WIDTH, VOCAB = 4096, 32, 14336, 8 * 128, 128_256
BPW = 18 * 8 / 32  # Q4_0: 16 bytes of 4-bit codes and a 2-byte fp16 scale per 32 weights
PHONE_BW, M2MAX_BW, FLASH_BW = 8533e6 * 8, 400e9, 6 * 2**30  # bytes/s


def params():
    """Llama 3 8B: per layer q, o (d x d), k, v (d x kv), SwiGLU (3 d ffn), two norms; final norm; untied head."""
    return LAYERS * (2 * D * D + 2 * D * KV_WIDTH + 3 * D * FFN + 2 * D) + D + 2 * VOCAB * D


FILE = params() * BPW / 8
READ = (params() - VOCAB * D) * BPW / 8  # the input embedding table is gathered, one row a token


def section_text():
    return chapter_outputs.section(NB, "serving_reliability-on-device", end="serving_reliability-cpu-kernels")


def test_param_count_is_the_published_one():
    assert params() == 8_030_261_248
    assert BPW == 4.5


def test_ceiling_table():
    out = chapter_outputs.printed(NB, "PHONE_BW = ")
    lines = out.splitlines()
    assert lines[0] == f"Llama 3 8B, Q4_0 (4.5 bits/weight): file {FILE / 1e9:.2f} GB, read per token {READ / 1e9:.2f} GB"
    for line, bw in zip(lines[1:], (PHONE_BW, M2MAX_BW)):
        rate = bw / READ
        flops = 2 * (params() - VOCAB * D) * rate
        assert f"{bw / 1e9:4.0f} GB/s -> at most {rate:5.1f} tokens/s" in line
        assert line.endswith(f"needs only {flops / 1e12:.2f} TFLOP/s")
    assert chapter_outputs.glued(NB, "sr_od_phone") == "16"
    assert chapter_outputs.glued(NB, "sr_od_m2max") == f"{M2MAX_BW / READ:.0f}" == "95"
    assert chapter_outputs.glued(NB, "sr_od_read") == f"{READ / 1e9:.2f}"
    assert chapter_outputs.glued(NB, "sr_od_phone_bw") == "68"


def test_decode_needs_far_less_compute_than_a_prefill():
    # the decode pace at 68 GB/s needs under a TFLOP/s; a 1,000-token prompt is > 10 TFLOP of work
    assert 2 * (params() - VOCAB * D) * PHONE_BW / READ < 1e12
    assert 2 * params() * 1000 > 10e12


def test_flash_numbers():
    out = chapter_outputs.printed(NB, "FLASH_BW = ")
    cold, naive, share = FILE / FLASH_BW, FLASH_BW / READ, 0.6462 * 0.024
    assert f"{cold:.2f} s of page-ins" in out
    assert f"at most {naive:.1f} tokens/s" in out
    overflow = FILE - 3e9  # the [H] question: 3 GB may stay resident, the rest streams from flash each token
    assert f"streaming the other {overflow / 1e9:.2f} GB: at most {FLASH_BW / overflow:.1f} tokens/s" in out
    assert chapter_outputs.glued(NB, "sr_od_pinned") == f"{FLASH_BW / overflow:.1f}" == "4.2"
    assert f"{share:.2%} of the model from flash per token, {0.5 / share:.0f}x less" in out
    assert chapter_outputs.glued(NB, "sr_od_cold") == "0.70"
    assert chapter_outputs.glued(NB, "sr_od_naive") == "1.5"
    assert chapter_outputs.glued(NB, "sr_od_flash_x") == "32"


@pytest.mark.parametrize("phrase", [
    "about 4.2 GB", "about 16 tokens/s", "about 95 on an M2 Max", "about 1.5 tokens/s",
    "force system to keep model in RAM rather than swapping or", "do not memory-map model (slower load but may reduce",
    "{cite:p}`brokenmount2023m2`", "{cite:p}`linuxmmpopulate`", "{ref}`cuda_basics-ml-compilers`",
    "{cite:p}`llamacppmmap0650ea8{src/llama-mmap.cpp, llama_mmap::impl}`", "`MAP_POPULATE`", "{cite:p}`alizadeh2023llmflash{§2.2}`", "{cite:p}`llamacppmmap{common/arg.cpp}`",
    "{ref}`cuda_basics-edge-npu-memory`", "{ref}`serving_reliability-cpu-edge`", "{ref}`weight_quantization-gguf`",
    "an assumption, not a\nspec read here",
])
def test_section_says(phrase):
    assert phrase in section_text()


def test_no_dangling_chapter_ref_and_no_fault_in_at_first_tokens_claim():
    text = section_text()
    assert "{ref}`cuda_basics`" not in text
    assert "paid during the first tokens instead of at load" not in text
    assert "applem2max" not in text


def test_interview_numbers_match_the_outputs():
    assert f"{READ / 1e9:.1f}" == "4.2"
    assert round(PHONE_BW / READ) == 16 and round(M2MAX_BW / READ) == 95
    assert f"{FLASH_BW / READ:.1f}" == "1.5"
