"""serving_reliability-weight-streaming: a streamed-weight decode of Llama 3 70B, recomputed by hand.

Llama 3 70B's shape is written out from its config (tests/data/model_configs.json); the link is a CS
system's 1.2 Tb/s of I/O (ALCF SC24 tutorial, Cerebras/README.MD; Cerebras's SwarmX glossary for the
CS-2), the resident rate Cerebras's 450 tokens/s launch figure (August 2024) and its 2,100 tokens/s of
October 2024 (speculative decoding added), the SRAM 21 PB/s (WSE-3).
"""
import json
import math
import pathlib

import mha_kit as mk

VOCAB, D, LAYERS, H_KV, D_H, FFN = 128_256, 8192, 80, 8, 128, 28_672
LINK = 1.2e12 / 8  # bytes/s
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def llama70_params():
    per_layer = D * D + 2 * D * H_KV * D_H + D * D + 3 * D * FFN + 2 * D  # q, k and v, o, SwiGLU, two norms
    return 2 * VOCAB * D + LAYERS * per_layer + D  # untied embedding and head, final norm


def test_params_match_the_kit():
    assert llama70_params() == 70_553_706_496 == mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"])


def test_a_streamed_step_takes_about_a_second():
    w16, w8 = 2 * llama70_params(), llama70_params()
    assert f"{LINK / 1e9:.0f}" == "150"
    assert f"{w16 / LINK:.2f}" == "0.94" and f"{w8 / LINK:.2f}" == "0.47"
    assert f"{LINK / w16:.1f}" == "1.1" and f"{LINK / w8:.1f}" == "2.1"


def test_streaming_against_the_resident_launch_figure():
    w16, resident = 2 * llama70_params(), 1 / 450
    assert f"{1e3 * resident:.1f}" == "2.2"
    assert f"{w16 / LINK / resident:,.0f}" == "423"
    assert math.ceil(450 * w16 / LINK) == 424  # sequences a streamed step must batch for 450 tokens/s in all
    assert f"{21e15 / LINK:,.0f}" == "140,000"  # WSE-3 SRAM bandwidth over the external link


def test_streaming_against_the_october_2024_rate():
    w16, later = 2 * llama70_params(), 1 / 2100
    assert f"{1e3 * later:.2f}" == "0.48"
    assert f"{w16 / LINK / later:,.0f}" == "1,976"


def test_the_section_is_labelled_and_cited():
    nb = json.loads((REPO_ROOT / "book" / "serving_reliability.ipynb").read_text())
    text = " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "(serving_reliability-weight-streaming)=" in text
    for key in ("cerebrasmemoryx", "cerebrasswarmx", "alcfcerebrassc24", "cerebrasinference2024",
                "register2024cerebrasinference", "cerebrasinference3x2024"):
        assert f"`{key}" in text
