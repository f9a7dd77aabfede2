"""The chapter "State-space models and linear-time layers": its form, and its claims recomputed.

State sizes are written out from the configs (Mamba 2.8B: width 2560, d_inner 5120, d_state 16,
d_conv 4, 64 layers; Mamba-2 2.7B: 80 heads of 64, d_state 128; Pythia 2.8B: 32 layers of width
2560) and compared with what the chapter printed.
"""
import re

import pytest
from booktoc import cells, markdown, png_figures, toc_docnames, printed

import mha_kit as mk

CHAPTER = "state_space_models"
LABELS = ("selective-scan", "mamba2", "performer", "rwkv", "state-bytes", "hybrids")
MIB, GIB = 2**20, 2**30


def test_in_the_toc_with_its_labels():
    assert f"book/{CHAPTER}" in toc_docnames()
    text = "\n".join(markdown(CHAPTER))
    for label in LABELS:
        assert f"({CHAPTER}-{label})=\n#" in text, label


def test_interview_box_is_tagged_and_one_png_figure_with_alt_text():
    text = "\n".join(markdown(CHAPTER))
    box = text[text.index("```{admonition} In the interview"):]
    assert re.search(r":class: tip\n\*\*\[[EMH]\] ", box)
    assert png_figures(CHAPTER) == 1


def test_nothing_on_stderr():
    assert all(o.get("name") != "stderr" for c in cells(CHAPTER) for o in c.get("outputs", []))


@pytest.mark.parametrize("line", ["parallel scan == recurrence: True", "decode steps  == recurrence: True",
                                  "SSD quadratic form == recurrence: True", "parallel == recurrent: True",
                                  "mask with every a_t = 1 is the causal mask: True"])
def test_equivalences_hold(line):
    assert line in printed(CHAPTER)


def test_mamba_state_against_pythia_kv():
    mamba_layer = 2 * (5120 * 16 + 5120 * (4 - 1))  # bf16 bytes
    mamba_model = 64 * mamba_layer
    assert mamba_model == mk.HYBRID_MODELS["mamba-2.8b"].cache_bytes(4096) == 12_451_840
    pythia_128k = 2 * 32 * 2560 * 131072 * 2  # K and V, layers, width, tokens, bf16
    assert pythia_128k == 40 * GIB
    text = printed(CHAPTER)
    assert f"Mamba 2.8B, 64 layers           {mamba_model / MIB:.1f} MiB" in text
    assert re.search(r"Pythia 2.8B shape, 32 layers .* 40 GiB", text)


def test_mamba2_layer():
    layer = 2 * (80 * 64 * 128 + (5120 + 2 * 128) * 3)
    assert layer == mk.mamba2_state_bytes(2560)
    assert f"one Mamba-2 layer's = {layer / (2 * 2 * 2560):.0f} tokens" in printed(CHAPTER)


def test_jamba_kv_at_256k_is_four_gib():
    kv = 2 * 4 * 8 * 128 * 262144 * 2  # K and V, 4 attention layers, 8 KV heads of 128, tokens, bf16
    assert kv == 4 * GIB
    assert "256K tokens:    4.0 GiB (KV 4 GiB)" in printed(CHAPTER)


def test_recall_degrades_with_pairs():
    errors = [float(e) for e in re.findall(r"relative recall error ([0-9.]+)", printed(CHAPTER))]
    assert len(errors) == 5 and errors == sorted(errors) and errors[2] == pytest.approx(1.0, abs=0.05)


def test_performer_error_falls_for_small_inputs():
    rows = {line.split()[1]: [float(v) for v in line.split()[2:]] for line in printed(CHAPTER).splitlines()
            if line.startswith("N(0, ")}  # uniform, then one error per number of features
    small, unit = rows["0.5^2)"], rows["1.0^2)"]
    assert small[1:] == sorted(small[1:], reverse=True) and small[-1] < small[0] < small[1]
    assert min(unit[1:]) > unit[0]  # unit-size entries: worse than ignoring the scores at every m


def test_linear_attention_state_is_fixed_and_small_against_llama3_8b_kv():
    # Katharopoulos et al. sec. 3.4: per head S is d_k x d_v and z has d_k entries; 32 layers of 32 heads of 128
    layers, heads, kv_heads, dh = 32, 32, 8, 128
    state = layers * heads * (dh * dh + dh) * 2  # bf16
    assert heads * (dh * dh + dh) == 528_384
    assert state == 33_816_576  # 32.25 MiB, the same at every context
    kv_per_token = 2 * layers * kv_heads * dh * 2  # K and V, bf16
    assert [kv_per_token * s for s in (4096, 32768, 131072)] == [512 * MIB, 4 * GIB, 16 * GIB]
    assert round(state / kv_per_token) == 258
    assert layers * kv_heads * (dh * dh + dh) * 2 == state // 4
    text = printed(CHAPTER)
    assert "32.2 MiB" in text and "8.1 MiB" in text and "at 258 tokens" in text


def test_rwkv5_head_states_against_rwkv4_vectors():
    """state_space_models-rwkv: 32 layers of width 4,096; RWKV-4 five vectors, RWKV-5/6/7 64 x 64 per head plus two."""
    layers, width = 32, 4096
    v4 = layers * 5 * width
    v5 = layers * (width // 64 * 64 * 64 + 2 * width)  # 64 heads of 64 x 64, and the two token-shifted inputs
    assert v4 * 4 == 2_621_440  # 2.5 MiB in fp32
    assert v5 * 4 == 34_603_008  # 33 MiB
    assert round(v5 / v4) == 13
