"""transformer_block-gpt2-params: GPT-2 medium, large and XL counts and sizes, recomputed by hand.

Shapes from nanoGPT's GPT.from_pretrained (n_layer, n_embd; vocab 50,257, block 1,024, biases on).
"""
import mha_kit as mk

V, CTX = 50257, 1024


def _count(L, d):
    per_layer = 4 * d * d + 4 * d + 8 * d * d + 5 * d + 4 * d  # attention, MLP, two LayerNorms
    return L * per_layer + V * d + CTX * d + 2 * d


def test_counts_match_released_names():
    assert _count(24, 1024) == mk.gpt2_params(24, 1024) == 354_823_168  # "355M"
    assert _count(36, 1280) == mk.gpt2_params(36, 1280) == 774_030_080  # "774M"
    assert _count(48, 1600) == mk.gpt2_params(48, 1600) == 1_557_611_200  # "1558M" in nanoGPT's comment


def test_untied_counts_and_bytes():
    assert [round(mk.gpt2_params(L, d, tied=False) / 1e6) for L, d in ((24, 1024), (36, 1280), (48, 1600))] \
        == [406, 838, 1638]
    assert round(4 * _count(48, 1600) / 1e9, 1) == 6.2  # fp32, tied
    assert round(2 * _count(48, 1600) / 1e9, 2) == 3.12  # bf16, tied


def test_without_qkv_biases_matches_raschka_exercise_4_2():
    """Raschka's GPTModel (qkv_bias=False, separate out_head) prints these in ch04 Exercise 4.2."""
    shapes = ((12, 768), (24, 1024), (36, 1280), (48, 1600))
    untied = [_count(L, d) + V * d - 3 * d * L for L, d in shapes]  # + separate head, - q/k/v biases
    assert untied == [163_009_536, 406_212_608, 838_220_800, 1_637_792_000]
    assert [u - V * d for u, (L, d) in zip(untied, shapes)] == [124_412_160, 354_749_440, 773_891_840, 1_557_380_800]
    assert [f"{4 * u / 2**20:.2f}" for u in untied] == ["621.83", "1549.58", "3197.56", "6247.68"]  # MiB, printed "MB"
