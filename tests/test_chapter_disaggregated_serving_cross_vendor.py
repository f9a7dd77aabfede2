"""disaggregated_serving-cross-vendor: KV bytes per prompt token over a CS-3's I/O, and SRAM capacity.

Llama 3 70B written out from its config (tests/data/model_configs.json); bf16 cache 2 bytes, fp8 1 byte;
a CS system's I/O 1.2 Tb/s (ALCF SC24 tutorial); four WSE-3s at 44 GB of SRAM each; the prefill at eight
H100 SXM's dense bf16 peak, 989 TFLOP/s each, with the chapter's FLOP count (weights once per token, the
last token's logits, causal attention h d_h n (n + 1) twice per layer).
"""
import json
import pathlib

import mha_kit as mk

VOCAB, D, LAYERS, H, H_KV, D_H, FFN = 128_256, 8192, 80, 64, 8, 128, 28_672
PROMPT, LINK = 8192, 1.2e12 / 8
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def weights_bf16():
    per_layer = D * D + 2 * D * H_KV * D_H + D * D + 3 * D * FFN + 2 * D
    return 2 * (2 * VOCAB * D + LAYERS * per_layer + D)


def prefill_seconds():
    matmuls = 2 * PROMPT * LAYERS * (2 * D * D + 2 * D * H_KV * D_H + 3 * D * FFN) + 2 * VOCAB * D
    attention = LAYERS * 2 * H * D_H * PROMPT * (PROMPT + 1)
    return (matmuls + attention) / (8 * 989e12)


def test_bytes_and_time_per_prompt_token():
    per_token = LAYERS * 2 * H_KV * D_H * 2  # K and V, bf16
    assert per_token == 327_680 == mk.kv_cache_bytes_per_token(mk.PRESETS["llama-3-70b"])
    assert f"{1e6 * per_token / LINK:.2f}" == "2.18"
    assert f"{1e6 * prefill_seconds() / PROMPT:.1f}" == "18.7"


def test_whole_prompt_against_its_prefill():
    move = LAYERS * 2 * H_KV * D_H * 2 * PROMPT / LINK
    assert f"{1e3 * move:.1f}" == "17.9" and f"{1e3 * move / 4:.1f}" == "4.5"
    assert f"{1e3 * prefill_seconds():.0f}" == "153"
    assert f"{move / prefill_seconds():.3f}" == "0.117"
    assert f"{LAYERS * 2 * H_KV * D_H * 2 * PROMPT / prefill_seconds() / 1e9:.0f}" == "18"  # break-even GB/s


def test_sram_holds_a_dozen_caches_beside_16_bit_weights():
    spare = 4 * 44 * 10**9 - weights_bf16()
    assert f"{spare / 1e9:.0f}" == "35"
    kv16 = LAYERS * 2 * H_KV * D_H * 2 * PROMPT
    assert spare // kv16 == 12 and spare // (kv16 // 2) == 25
    node = 8 * 80 * 10**9 - weights_bf16()
    assert node // kv16 == 185 and node // (kv16 // 2) == 371


def test_the_section_is_labelled_and_cited():
    nb = json.loads((REPO_ROOT / "book" / "disaggregated_serving.ipynb").read_text())
    text = " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "(disaggregated_serving-cross-vendor)=" in text
    for key in ("awscerebras2026", "cerebrasdisagg2026", "nvidiarubincpx2025", "alcfcerebrassc24",
                "register2024cerebrasinference", "tomshw2026cpxroadmap", "tomshw2026buckqa",
                "nvidiagroq3lpx2026"):
        assert key in text
    assert "we've pulled CPX" in text  # CPX dropped at GTC 2026: the section must not present it as coming
