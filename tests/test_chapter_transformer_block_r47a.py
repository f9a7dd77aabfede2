"""Sections transformer_block-ffn-activations and transformer_block-gpt3-llama-norm of "The block around attention".

Recomputed without mha_kit: ReLU, SiLU = z sigma(z) and GPT-2's tanh-form GELU on the same seeded Gaussian
pre-activations (Hendrycks and Gimpel 2016, §2; Shazeer 2020, §2), the parameter match 2 d 4d = 3 d d_ff of a gated
FFN with T5-base's widths (Shazeer 2020, §3), the batch union 1 - (1 - p)^B of rows a batch needs, TEAL's
reported sparsity and speed-ups (Liu et al. 2024, Abstract), and GLM-130B's 12,288 and 32,768 (its training notes).
"""
import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("transformer_block")
ACT = chapter_outputs.section(NB, "transformer_block-ffn-activations", end="transformer_block-decoder-layer")
NORM = chapter_outputs.section(NB, "transformer_block-gpt3-llama-norm", end="transformer_block-residuals")
OUT = chapter_outputs.printed(NB, "rng_act = np.random.default_rng(47)")
TABLE = chapter_outputs.printed(NB, "ACTIVATIONS = {")


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # the logistic function, written through tanh


def test_exact_zero_shares():
    rng = np.random.default_rng(47)
    gate, up = rng.standard_normal(32_768), rng.standard_normal(32_768)
    relu = np.where(gate > 0, gate, 0.0)
    silu = gate * sigmoid(gate)
    gelu = 0.5 * gate * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (gate + 0.044715 * gate ** 3)))
    relu_zero = np.count_nonzero(relu == 0) / gate.size
    assert 0.45 < relu_zero < 0.55  # half a Gaussian is negative
    assert f"ReLU                   exact zeros {relu_zero:7.2%}" in OUT
    assert f"ReGLU  relu(xW) * xV   exact zeros {np.count_nonzero(relu * up == 0) / gate.size:7.2%}" in OUT
    for name, out in (("GELU", gelu), ("SiLU", silu), ("SwiGLU silu(xW) * xV", silu * up)):
        assert np.count_nonzero(out == 0) == 0
        assert f"{name:<22} exact zeros   0.00%   |value| < 0.01 {np.mean(np.abs(out) < 0.01):7.2%}" in OUT
    assert chapter_outputs.glued(NB, "tb_act_relu_zero") == f"{relu_zero:.2%}"
    assert chapter_outputs.glued(NB, "tb_act_swiglu_zero") == "0.00%"


def test_negative_lobes():
    # SiLU's minimum solves 1 + e^-z + z e^-z = 0, i.e. z = -1 - W(1/e), about -1.2785; value about -0.2785
    z = -1.2784645
    silu_min = z * sigmoid(z)
    assert "SiLU minimum -0.278 at z = -1.28" in OUT and abs(silu_min + 0.2785) < 1e-3
    assert chapter_outputs.glued(NB, "tb_act_silu_min") == "-0.278"
    assert "GELU minimum -0.170 at z = -0.75" in OUT


def test_gated_parameter_match():
    d, d_ff, d_gated = 768, 3072, 2048
    assert 2 * d * d_ff == 3 * d * d_gated == 4_718_592 and d_gated * 3 == 8 * d
    assert f"2 x 768 x 3,072 = {2 * d * d_ff:,} weights; 3 x 768 x 2,048 = {3 * d * d_gated:,}; 8/3 x 768 = 2,048" in OUT
    assert 32_768 * 3 == 12_288 * 8
    assert "GLM-130B: d_ff / d = 32,768 / 12,288 = 2.6667 = 8/3: True" in TABLE
    assert chapter_outputs.glued(NB, "tb_act_glm_ratio") == "2.667"


def test_batch_union_and_teal():
    p, batch = 0.1, 32
    needed = 1.0
    for _ in range(batch):
        needed *= 1.0 - p  # probability no token in the batch activates the row
    union = 1.0 - needed
    assert 0.96 < union < 0.97
    assert f"at per-token activation 10%: 1 - (1 - p)^B = {union:.1%}" in OUT
    assert chapter_outputs.glued(NB, "tb_act_union") == f"{union:.1%}" == "96.6%"
    assert chapter_outputs.glued(NB, "tb_act_union_p") == "10%" and chapter_outputs.glued(NB, "tb_act_union_b") == "32"
    assert chapter_outputs.glued(NB, "tb_teal_sparsity") == "40%-50%"
    assert chapter_outputs.glued(NB, "tb_teal_speed40") == "1.53x" and chapter_outputs.glued(NB, "tb_teal_speed50") == "1.8x"
    assert "{glue:text}`tb_act_union`" in ACT and "{glue:text}`tb_teal_speed50`" in ACT


def test_model_rows():
    gated = {"PaLM": "SwiGLU", "LLaMA": "SwiGLU", "ChatGLM2-6B": "SwiGLU", "GLM-130B": "GeGLU", "Gemma": "GeGLU"}
    plain = {"GPT-2": "GELU", "BLOOM": "GELU", "Falcon": "GELU", "ChatGLM-6B": "GELU", "OPT": "ReLU"}
    rows = {line.split(" (")[0]: line for line in TABLE.splitlines() if " (20" in line}
    for name, act in gated.items():
        assert act in rows[name] and "3 matrices" in rows[name], name
    for name, act in plain.items():
        assert act in rows[name] and "2 matrices" in rows[name], name


def test_cited_and_linked():
    chapter_outputs.assert_cited(ACT, ["lu2019dyingrelu", "hendrycks2016gelu", "mirzadeh2023relu", "shazeer2020glu",
                                       "dauphin2017glu", "liu2023dejavu", "openaigpt2code", "brown2020gpt3",
                                       "chowdhery2022palm", "bigsciencetr11", "glm130breadme", "touvron2023llama",
                                       "hffalconmlp", "chatglm6bmodeling", "chatglm2modeling", "gemmapytorchmodel",
                                       "liu2024teal", "bai2023qwen", "radford2018gpt", "devlin2019bert"])
    assert "relufied or thresholded (TEAL)" in ACT and "ReLU (OPT)" in ACT  # both sparsity routes; OPT's ReLU named
    assert "shazeer2020glu{§3.1}" not in ACT  # the subsection was not read in the paper
    assert "{ref}`serving_reliability-on-device`" in ACT and ":class: dropdown" in ACT
    assert "In the interview" in ACT and "In the interview" in NORM
    chapter_outputs.assert_cited(NORM, ["brown2020gpt3", "openaigpt2code", "touvron2023llama"])
    assert "{ref}`transformer_block-deepnorm`" in NORM and "pre-normalization" in NORM
    assert "GPT-3 is Post-LN" in NORM  # the trap is named
