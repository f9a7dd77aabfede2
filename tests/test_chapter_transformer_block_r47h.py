"""Section transformer_block-glm-vs-llama of "The block around attention": GLM's block against Llama's.

Recomputed without mha_kit: one token's K and V, 2 x layers x KV heads x head size x 2 bytes (bf16), from
THUDM/chatglm-6b and THUDM/chatglm2-6b config.json, transformers' GlmConfig (glm-4-9b-chat defaults), the
GLM-4.5 report's Table 1 (3 dense + 89 MoE layers, 96 heads, 8 KV heads of 128, hidden 5120) and the Llama 3
paper's Table 3 (8B: 32 layers; 70B: 80 layers; 8 KV heads of 128). ChatGLM2's PrefixEncoder sizes the same
product; ChatGLM-6B's GLMBlock scales its residual by (2 x 28) ** 0.5.
"""
import chapter_outputs

NB = chapter_outputs.notebook("transformer_block")
SECTION = chapter_outputs.section(NB, "transformer_block-glm-vs-llama", end="transformer_block-weight-tying")
OUT = chapter_outputs.printed(NB, "GLM_FAMILY = {")

BF16 = 2
SHAPES = {  # name: (layers, query heads, KV heads, head size, hidden)
    "ChatGLM-6B": (28, 32, 32, 128, 4096),
    "ChatGLM2-6B": (28, 32, 2, 128, 4096),
    "GLM-4-9B": (40, 32, 2, 128, 4096),
    "GLM-4.5": (3 + 89, 96, 8, 128, 5120),
    "Llama 3 8B": (32, 32, 8, 128, 4096),
    "Llama 3 70B": (80, 64, 8, 128, 8192),
}


def kv_bytes(name):
    layers, _, kv_heads, head, _ = SHAPES[name]
    return 2 * layers * kv_heads * head * BF16  # a K and a V row per KV head per layer


def test_kv_bytes_per_token_rows():
    expected = {"ChatGLM-6B": 458_752, "ChatGLM2-6B": 28_672, "GLM-4-9B": 40_960, "GLM-4.5": 376_832,
                "Llama 3 8B": 131_072, "Llama 3 70B": 327_680}
    for name, (layers, heads, kv_heads, head, hidden) in SHAPES.items():
        assert kv_bytes(name) == expected[name], name
        row = next(line for line in OUT.splitlines() if line.startswith(name + " "))
        cells = row[len(name):].split()
        assert [int(c) for c in cells[:4]] == [layers, heads, kv_heads, head], name
        assert cells[-1] == f"{kv_bytes(name):,}" and cells[-2] == f"{heads * head / hidden:.1f}", name


def test_glued_numbers():
    glued = {key: chapter_outputs.glued(NB, key) for key in (
        "tb_glmx_mqa_ratio", "tb_glmx_q_width", "tb_glmx_q_ratio", "tb_glmx_match_heads", "tb_glmx_vs70b",
        "tb_glmx_layers45", "tb_glmx_alpha", "tb_glmx_glm4_vs_l8")}
    assert kv_bytes("ChatGLM-6B") // kv_bytes("ChatGLM2-6B") == 16 == int(glued["tb_glmx_mqa_ratio"])
    assert glued["tb_glmx_q_width"] == f"{96 * 128:,}" == "12,288"
    assert glued["tb_glmx_q_ratio"] == "2.4" and glued["tb_glmx_match_heads"] == "40"
    assert glued["tb_glmx_vs70b"] == f"{kv_bytes('GLM-4.5') / kv_bytes('Llama 3 70B'):.2f}" == "1.15"
    assert glued["tb_glmx_layers45"] == "92"
    assert glued["tb_glmx_alpha"] == "7.5" and 7.48 < 56 ** 0.5 < 7.49
    assert glued["tb_glmx_glm4_vs_l8"] == "3.2"
    for name, key in (("ChatGLM-6B", "chatglm6b"), ("ChatGLM2-6B", "chatglm2"), ("GLM-4-9B", "glm4"),
                      ("GLM-4.5", "glm45"), ("Llama 3 8B", "llama8b"), ("Llama 3 70B", "llama70b")):
        assert chapter_outputs.glued(NB, f"tb_glmx_kv_{key}") == f"{kv_bytes(name):,}", name


def test_ffn_width_and_mtp_layer():
    ffn = 13696  # GlmConfig intermediate_size for glm-4-9b-chat
    assert ffn % 128 == 0 and ffn - 128 < 10 / 3 * 4096 < ffn  # the multiple of 128 just above 10/3 d
    assert chapter_outputs.glued(NB, "tb_glmx_ffn_ratio") == f"{ffn / 4096:.3f}" == "3.344"
    assert chapter_outputs.glued(NB, "tb_glmx_ten_thirds") == "3.333"
    mtp = 2 * (3 + 89 + 1) * 8 * 128 * BF16  # Table 1's one MTP layer as a 93rd attention layer
    assert mtp == 380_928 and chapter_outputs.glued(NB, "tb_glmx_kv_glm45_mtp") == f"{mtp:,}"
    assert chapter_outputs.glued(NB, "tb_glmx_layers45_mtp") == "93"
    assert chapter_outputs.glued(NB, "tb_glmx_mtp_pct") == f"{100 * (mtp / kv_bytes('GLM-4.5') - 1):.1f}" == "1.1"


def test_section_wording_fixed():
    assert "scaled down" not in SECTION and "on the attention logits" not in SECTION
    mask_row = next(line for line in SECTION.splitlines() if line.startswith("| mask at inference"))
    glm45_cell = mask_row.split("|")[5]
    assert glm45_cell.strip().startswith("causal") and "not a mask" in glm45_cell
    assert "**Trap:**" in SECTION.split("In the interview")[1].split("```")[0]


def test_prefix_encoder_matches():
    width = 28 * 128 * 2 * 2  # num_layers * kv_channels * multi_query_group_num * 2 (K and V)
    assert width * BF16 == kv_bytes("ChatGLM2-6B")
    assert f"PrefixEncoder width {width:,} elements x 2 bytes = {width * BF16:,} B: True" in OUT


def test_table_cited_and_linked():
    chapter_outputs.assert_cited(SECTION, ["zeng2025glm45", "glm2024chatglm", "chatglm2config", "hfglmconfig",
                                           "chatglm6bmodeling", "chatglm2modeling"])
    for label in ("position_encodings-bert-vit-glm", "transformer_block-deepnorm", "long_context_structure-prefix-lm",
                  "moe_serving-aux-free", "speculative_decoding-mtp-training", "tradeoffs-gqa-vs-mqa",
                  "transformer_block-llama-glm-bloom", "tensor_parallel-replication"):
        assert "{ref}`" + label + "`" in SECTION, label
    assert "In the interview" in SECTION and ":class: dropdown" in SECTION
    assert "2 KV groups" not in SECTION  # the book never calls KV heads groups
