"""Section kv_cache_basics-cache-x: caching each layer's input x instead of K and V.

Recomputed from Llama 3 8B's config.json (hidden 4096, 32 layers, 8 KV heads of 128) and the H100 SXM
datasheet (989 TFLOP/s dense bf16, 3.35 TB/s) and PCIe Gen5 x16 (64 GB/s each way), without mha_kit.
"""
import pytest

import chapter_outputs

LABEL = "kv_cache_basics-cache-x"
D, LAYERS, D_H, T = 4096, 32, 128, 8192
FLOPS, HBM, PCIE = 989e12, 3.35e12, 64e9


def row(kv_heads):
    kv_n = 2 * kv_heads * D_H
    kv_b, x_b = kv_n * 2 * T * LAYERS, D * 2 * T * LAYERS
    remat = 4 * T * D * kv_heads * D_H * LAYERS
    ms = 1e3 * remat / FLOPS
    return D / kv_n, remat, kv_b - x_b, 1e3 * kv_b / HBM, 1e3 * x_b / HBM + ms, 1e3 * kv_b / PCIE, 1e3 * x_b / PCIE + ms


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("kv_cache_basics")


def test_numbers(nb):
    gqa, mha = row(8), row(32)
    assert gqa[0] == 2.0 and mha[0] == 0.5
    assert gqa[1] == 4_398_046_511_104  # 4 * 8192 * 4096 * 1024 * 32
    assert mha[1] / mha[2] == 2 * D  # FLOPs per byte saved, MHA in bf16
    assert gqa[3] < gqa[4] and mha[3] < mha[4] and mha[5] > mha[6] and gqa[5] < gqa[6]
    expect = {"kb_xc_gqa_ratio": "2.0", "kb_xc_mha_ratio": "0.5", "kb_xc_gqa_tflop": f"{gqa[1] / 1e12:.1f}",
              "kb_xc_gqa_hbm": f"{gqa[3]:.2f}", "kb_xc_gqa_hbm_x": f"{gqa[4]:.1f}",
              "kb_xc_mha_hbm": f"{mha[3]:.1f}", "kb_xc_mha_hbm_x": f"{mha[4]:.1f}",
              "kb_xc_mha_pcie": f"{mha[5]:.0f}", "kb_xc_mha_pcie_x": f"{mha[6]:.0f}",
              "kb_xc_per_byte": "8,192", "kb_xc_ridge": f"{FLOPS / HBM:.0f}", "kb_xc_pcie_ridge": f"{FLOPS / PCIE:,.0f}"}
    for key, value in expect.items():
        assert chapter_outputs.glued(nb, key) == value, key
    out = chapter_outputs.printed(nb, "xc_mha = mk.AttentionConfig(")
    assert "K,V 2,048 vs x 4,096 numbers/token/layer (x / K,V = 2.0); at 8,192 tokens 1 GiB vs 2 GiB a step" in out
    assert "K,V 8,192 vs x 4,096 numbers/token/layer (x / K,V = 0.5); at 8,192 tokens 4 GiB vs 2 GiB a step" in out
    assert f"from HBM {gqa[3]:.2f} vs {gqa[4]:.2f}, over PCIe {gqa[5]:.1f} vs {gqa[6]:.1f}" in out


def test_step_weight_work(nb):
    """A decode step's usual work: 2 FLOPs per weight, Llama 3 8B with its untied 128,256 x 4,096 head."""
    attn = 2 * D * D + 2 * D * 8 * D_H
    params = LAYERS * (attn + 3 * D * 14336) + 2 * 128256 * D
    assert chapter_outputs.glued(nb, "kb_xc_gqa_steps") == f"{row(8)[1] / (2 * params):,.0f}"


def test_section_form(nb):
    text = chapter_outputs.section(nb, LABEL, end="kv_cache_basics-flops-saved")
    assert text.startswith(f"({LABEL})=\n### ")
    assert "```{admonition} In the interview\n:class: tip\n**[M]" in text
    assert ":class: dropdown" in text
    for locator in ("cs182fa23summ2{", "tomar2025xquant{Abstract}", "llama3_8b_config{config.json}",
                    "{ref}`kv_cache_basics-flops-saved`"):
        assert locator in text, locator
    for caveat in ("summed\nserially (no overlap)", "cache part of the\nstep only", "at datasheet peak, a lower\nbound",
                   "$2d$ = {glue:text}`kb_xc_per_byte` FLOP/B at bf16"):
        assert caveat in text, caveat
