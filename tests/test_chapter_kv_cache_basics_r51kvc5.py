"""Section kv_cache_basics-beam-reorder: beam search on a contiguous cache copies every beam's rows each step.

Recomputed from Llama 3 8B's shape (32 layers, 8 KV heads of 128, bf16), the H100 SXM's 3.35 TB/s,
and Llama 3 8B's weights read per decode step (embedding table excluded), without mha_kit.
"""
import pytest

import chapter_outputs

LABEL = "kv_cache_basics-beam-reorder"
LAYERS, KV_HEADS, D_H, BYTES, BEAMS, BLOCK, HBM = 32, 8, 128, 2, 4, 16, 3.35e12
D, FF, VOCAB = 4096, 14336, 128256
PER_TOKEN = 2 * LAYERS * KV_HEADS * D_H * BYTES
# per layer: q, o (d x d), k, v (d x 1024), three FFN matrices, two RMSNorm weights; then the final norm and head
WEIGHTS = BYTES * (LAYERS * (2 * D * D + 2 * D * KV_HEADS * D_H + 3 * D * FF + 2 * D) + D + VOCAB * D)


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("kv_cache_basics")


def test_numbers(nb):
    assert PER_TOKEN == 131_072
    expect_bytes = {1024: "512 MiB", 4096: "2 GiB", 8192: "4 GiB"}
    for t, text in expect_bytes.items():
        gather = BEAMS * t * PER_TOKEN
        assert gather == t * 524_288
        assert chapter_outputs.glued(nb, f"kb_br_gather_{t}") == text
        assert chapter_outputs.glued(nb, f"kb_br_gather_ms_{t}") == f"{1e3 * 2 * gather / HBM:.2f}"
        assert chapter_outputs.glued(nb, f"kb_br_step_ms_{t}") == f"{1e3 * (WEIGHTS + gather) / HBM:.2f}"
    assert BEAMS * BLOCK * PER_TOKEN == 8 * 2**20
    assert chapter_outputs.glued(nb, "kb_br_cow") == "8 MiB"
    assert chapter_outputs.glued(nb, "kb_br_ratio") == "512"  # 4 GiB / 8 MiB
    out = chapter_outputs.printed(nb, "br_beams, br_block = 4, 16")
    assert "KV per token 131,072 B" in out and "8 MiB" in out


def test_gather_grows_faster_than_step(nb):
    small = float(chapter_outputs.glued(nb, "kb_br_gather_ms_1024")) / float(chapter_outputs.glued(nb, "kb_br_step_ms_1024"))
    large = float(chapter_outputs.glued(nb, "kb_br_gather_ms_8192")) / float(chapter_outputs.glued(nb, "kb_br_step_ms_8192"))
    assert large > 5 * small


def test_section_form(nb):
    text = chapter_outputs.section(nb, LABEL, end="kv_cache_basics-parallel-samples-llamacpp")
    assert text.startswith(f"({LABEL})=\n### ")
    assert "```{admonition} In the interview\n:class: tip\n**[M]" in text
    assert ":class: dropdown" in text
    for locator in ("hfbeamreorder{generation/utils.py, GenerationMixin._beam_search}",
                    "hfbeamreorder{cache_utils.py, CacheLayerMixin.reorder_cache}",
                    "openvinogenaihow{site/docs/concepts/how-it-works.md", "kwon2023vllm{§4.4}",
                    "{ref}`kv_cache_basics-beam-search`", "{ref}`serving_kv_cache-paging`",
                    "openvinogpukvcache{Basic structure of SDPA and kv cache in a stateful model}",
                    "hfcacheutils{DynamicLayer.update, StaticLayer}"):
        assert locator in text, locator
    assert "IndirectKVCache" in text and "beam_table" in text and "torch.cat" in text
