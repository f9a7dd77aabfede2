"""Section weight_quantization-mlc-names: MLC-LLM's q4f16_1 (int4, group 32, fp16 scale) and q3f16_1 (int3, group
40), packed in uint32 (mlc-llm python/mlc_llm/quantization/quantization.py and group_quantization.py, 79d603f)."""
import chapter_outputs

NB = chapter_outputs.notebook("weight_quantization")


def test_bits_per_weight():
    out = chapter_outputs.printed(NB, "def packed_bits(")
    q4 = 4 * (32 // 4) / (32 // 4) + 16 / 32  # 8 codes fill a uint32 word
    q3 = 32 / (32 // 3) + 16 / 40  # 10 codes in 30 of 32 bits
    assert (q4, q3) == (4.5, 3.6)
    assert f"MLC q4f16_1: int4, group 32, fp16 scale     {q4:.3f} bits per weight" in out
    assert f"MLC q3f16_1: int3, group 40, fp16 scale     {q3:.3f} bits per weight" in out
    assert f"int4, group 128, fp16 scale (symmetric)     {4 + 16 / 128:.3f} bits per weight" in out
    assert f"int4, group 128, fp16 scale + zero          {4 + 32 / 128:.3f} bits per weight" in out
    assert "int3 in uint32: 10 codes a word, 2 bits of 32 unused" in out
    assert "int4: codes 0..14 (15 of 16), scale = max|w| / 7" in out
    assert "int3: codes 0..6 (7 of 8), scale = max|w| / 3" in out
    assert chapter_outputs.glued(NB, "wq_mlc_q4") == "4.5"
    assert chapter_outputs.glued(NB, "wq_mlc_q3") == "3.6"
    assert chapter_outputs.glued(NB, "wq_mlc_g128_zero") == f"{4 + (16 + 16) / 128:.2f}"


def test_prose():
    text = chapter_outputs.section(NB, "weight_quantization-mlc-names", end="weight_quantization-scale-granularity")
    chapter_outputs.assert_cited(text, ["mlcquantization"])
    chapter_outputs.assert_links(text, ["weight_quantization-keep-high-precision", "weight_quantization-arithmetic",
                                        "weight_quantization-gptq-awq"])
    assert "quantize_embedding=True" in text and "quantize_final_fc=True" in text and "79d603f" in text
    assert "In the interview" in text and "dropdown followup" in text
    assert "GroupQuantize._quantize" in text and "GroupQuantizeConfig" not in text
    assert "algorithm 1" not in text and "q4f16_2" in text and "q4f16_autoawq" in text
    assert "4.25" not in text
