"""Section rope_scaling-alibi-models: which LLMs use ALiBi, and what replaced it.

Recomputed without mha_kit: Baichuan-13B's README table (19.4 and 25.4 tokens/s, fp16, batch 1, A100),
Llama 4 Scout in transformers (48 layers, no_rope_layer_interval 4) and gpt-oss's ModelConfig
(initial_context_length 4096, rope_scaling_factor 32).
"""
import chapter_outputs

NB = chapter_outputs.notebook("rope_scaling")
SECTION = chapter_outputs.section(NB, "rope_scaling-alibi-models", end="rope_scaling-alibi-rope-experiment")
OUT = chapter_outputs.printed(NB, "bc_llama13b, bc_baichuan13b")


def test_baichuan_table_against_its_text():
    gain = 100 * (25.4 / 19.4 - 1)
    assert f"{gain:.1f}" == "30.9"
    assert "+30.9%; text: +31.6%" in OUT
    assert chapter_outputs.glued(NB, "bc_gain") == "30.9%"


def test_rope_in_newer_models():
    assert 48 - 48 // 4 == 36 and 4096 * 32 == 131_072
    assert "RoPE in 36 of 48 layers" in OUT and "YaRN x32 from initial_context_length 4,096 -> 131,072" in OUT
    assert "trained at" not in OUT
    assert chapter_outputs.glued(NB, "l4_rope_layers") == "36 of 48"


def test_each_model_cited():
    chapter_outputs.assert_cited(SECTION, ["bigsciencetr11", "mpt7bconfig", "baichuan13breadme", "nemobaichuan2",
                                           "gptosstorchmodel", "fa3alibiissue", "vllmfa3alibipr", "fa3fa4varlen"])
    assert "Baichuan chose ALiBi" not in SECTION
    assert "`hfllama4{configuration_llama4.py},meta2025llama4{iRoPE}`" in SECTION
    for model in ("BLOOM", "MPT-7B", "Baichuan-13B", "Baichuan 2-13B"):
        assert model in SECTION
    assert "A100-SXM4-80G" in SECTION and "transformers 4.29.1" in SECTION
    assert "```{admonition} In the interview" in SECTION and ":class: dropdown" in SECTION
