"""Section cuda_basics-inference-mixed-precision: Llama 3 8B served in bf16 against fp32 on one H100 SXM, recomputed
in plain Python without mha_kit.

Primary figures: Llama 3 8B's config (d 4,096, 32 layers, 8 KV heads of 128, FFN 14,336, vocabulary 128,256, untied
output layer); the H100 SXM datasheet (3.35 TB/s HBM3, 989 dense BF16 TFLOPS, 67 FP32 TFLOPS). A batch-1 decode
step reads every parameter but the input embedding table once."""
import chapter_outputs

NB = chapter_outputs.notebook("cuda_basics")
LABEL = "cuda_basics-inference-mixed-precision"
MARKER = "# serving Llama 3 8B in bf16 against fp32"
D, V, LAYERS, KV_DIM, FFN = 4096, 128_256, 32, 8 * 128, 14_336
HBM, BF16, FP32 = 3.35e12, 989e12, 67e12


def params():
    layer = 2 * D * D + 2 * D * KV_DIM + 3 * D * FFN + 2 * D  # q, o; k, v; gate, up, down; two norms
    total = LAYERS * layer + D + 2 * V * D  # final norm, input table, output layer
    return total, total - V * D


def test_parameters_and_bytes():
    total, streamed = params()
    assert total == 8_030_261_248
    out = chapter_outputs.printed(NB, MARKER)
    for fmt, size in (("fp32", 4), ("bf16", 2)):
        line = (f"{fmt}: {total:,} parameters = {total * size / 1e9:.1f} GB; "
                f"batch-1 decode floor {streamed * size / HBM * 1e3:.2f} ms a token")
        assert line in out, line
    assert chapter_outputs.glued(NB, "mp_gb_fp32") == f"{total * 4 / 1e9:.1f}"
    assert chapter_outputs.glued(NB, "mp_gb_bf16") == f"{total * 2 / 1e9:.1f}"
    assert chapter_outputs.glued(NB, "mp_floor_bf16") == f"{streamed * 2 / HBM * 1e3:.2f}"
    assert chapter_outputs.glued(NB, "mp_params_b") == "8.03"


def test_rates():
    out = chapter_outputs.printed(NB, MARKER)
    assert f"bf16 tensor cores 989 TFLOPS dense, FP32 CUDA cores 67: {BF16 / FP32:.1f}x" in out
    assert chapter_outputs.glued(NB, "mp_rate_x") == f"{BF16 / FP32:.1f}" == "14.8"


def test_section_cites_links_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="cuda_basics-block-one-sm")
    chapter_outputs.assert_cited(text, ["micikevicius2018mixed", "nvidiavoltatensorcore", "tritonmatmul",
                                        "flashattnrepo", "vllmsampler", "nvidiah100"])
    for ref in ("cuda_basics-loss-scaling", "cuda_basics-tf32", "softmax_numerics-rmsnorm-fp32",
                "softmax_numerics-fp16-or-bf16-serving", "decoding_sampling-logits-to-token",
                "deployment_plan-decode-floor", "softmax_numerics-summing-many"):
        assert f"{{ref}}`{ref}`" in text and ref in chapter_outputs.book_labels(), ref
    assert "{admonition} In the interview" in text and text.count(":class: dropdown") == 1
    # the FlashAttention claim cites the three locators that carry it: running max/sum, accumulator, split-KV partials
    assert "csrc/flash_attn/src/softmax.h, struct Softmax" in text and "kernel_traits.h, ElementAccum" in text
    assert "set_params_splitkv" in text and "not one\nengine" in text
