"""Section mla_serving-kimi-k2-cache: Kimi K2's MLA cache at 80,000 tokens in bf16, one-byte FP8 and FlashMLA's FP8
layout, the GQA misreading, and why W4A8 leaves the cache alone. Recomputed from the model card's shape (61 layers,
DeepSeek-V3's 512-number latent and 64-number rotary key) and FlashMLA's row layout, not through mha_kit."""
import pytest

import chapter_outputs

LAYERS, LATENT, ROPE, TOKENS = 61, 512, 64, 80_000  # Kimi K2 README + DeepSeek-V3 sec. 4.2
FLASHMLA_ROW = LATENT + LATENT // 128 * 4 + ROPE * 2  # FP8 latent, a float32 scale per 128, bf16 rotary key


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("mla_serving")


def test_per_token_and_80k(nb):
    per_token = LAYERS * (LATENT + ROPE) * 2
    assert per_token == 70_272  # exact, and independent of the 64 or 128 query heads
    out = chapter_outputs.printed(nb, "k2 = dataclasses.replace")
    assert f"{per_token:,} B at 64 heads, {per_token:,} B at 128" in out
    assert chapter_outputs.glued(nb, "mla_k2_per_token") == "70,272"
    bf16, fp8, flash = TOKENS * per_token, TOKENS * per_token // 2, TOKENS * LAYERS * FLASHMLA_ROW
    assert FLASHMLA_ROW == 656
    assert chapter_outputs.glued(nb, "mla_k2_bf16_gb") == f"{bf16 / 1e9:.2f}" == "5.62"
    assert chapter_outputs.glued(nb, "mla_k2_fp8_gb") == f"{fp8 / 1e9:.2f}" == "2.81"
    assert chapter_outputs.glued(nb, "mla_k2_flashmla_gb") == f"{flash / 1e9:.2f}" == "3.20"
    assert f"{bf16 / 1e9:6.2f} GB ({bf16 / 2**30:.2f} GiB)" in out


def test_gqa_trap(nb):
    gqa = TOKENS * 80 * 2 * 8 * 128 * 2  # Llama 3 70B: 80 layers, K and V, 8 KV heads of 128, bf16
    assert chapter_outputs.glued(nb, "mla_k2_gqa_gb") == f"{gqa / 1e9:.1f}" == "26.2"
    assert chapter_outputs.glued(nb, "mla_k2_gqa_x") == f"{gqa / (TOKENS * LAYERS * 576 * 2):.1f}"


def test_section_cites_and_links(nb):
    text = chapter_outputs.section(nb, "mla_serving-kimi-k2-cache", end="mla_serving-vs-lora")
    chapter_outputs.assert_cited(text, ["kimik2repo", "deepseekv3", "vllmengineargs", "flashmla"])
    assert "sparse-decode FP8 format for DeepSeek-V3.2" in " ".join(text.split())  # the 656-byte row is not K2's dense FP8 cache
    for label in ("weight_quantization-w4a8", "mla_serving-fp8-latent", "disaggregated_serving-kimi-80k",
                  "low_precision_kv-kv-or-weights"):
        assert "{ref}`" + label + "`" in text
    assert "In the interview" in text and ":class: dropdown" in text
