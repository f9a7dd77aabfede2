"""Section cuda_basics-gpu-comparison: A100 / H100 / H800 / RTX 4090, recomputed from the primary figures.

A100 datasheet (80 GB, 2,039 GB/s, 312 dense bf16 TFLOPS, NVLink 600 GB/s both ways); H100 datasheet (80 GB,
3.35 TB/s, 1,979 TFLOPS with sparsity, 989 dense) and whitepaper (NVLink 900 GB/s both ways); H800: DeepSeek's FlashMLA
notes (3.35 TB/s, 990 TFLOPS) and ISCA 2025 paper sec. 4.1 (NVLink 400 GB/s both ways), no capacity; RTX 4090:
Ada whitepaper Appendix A Table 2 (24 GB, 1008 GB/sec, BF16 with FP32 accumulate 165.2/330.4 dense/sparse) and
PCIe 4.0 x16 (16 GT/s x 16 lanes = 32 GB/s each way). Llama 3 8B / 70B parameter counts from their config.json.
"""
import json
import pathlib
import re

import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "cuda_basics.ipynb"


def _params(layers, d, ffn, heads, kv_heads, vocab):
    head = d // heads
    attn = d * d * 2 + 2 * d * kv_heads * head  # q, o; k, v
    return layers * (attn + 3 * d * ffn + 2 * d) + 2 * vocab * d + d  # untied embeddings, final norm


P8 = _params(32, 4096, 14336, 32, 8, 128256)
P70 = _params(80, 8192, 28672, 64, 8, 128256)
# card: (memory GB or None, bytes/s, dense FLOP/s, link GB/s each way)
CARDS = {
    "A100 80GB SXM": (80, 2039e9, 312e12, 600 / 2),
    "H100 SXM": (80, 3.35e12, 989e12, 900 / 2),  # 1,979 with sparsity; the sheet rounds the dense half to 989
    "H800 SXM": (None, 3.35e12, 990e12, 400 / 2),
    "GeForce RTX 4090": (24, 1008e9, 330.4e12 / 2, 16 * 16 / 8),
}


def _outputs():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and "cb_gpus_4090_floor" in "".join(c["source"]))
    text = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
    glued = {o["metadata"]["scrapbook"]["name"]: o["data"]["application/papermill.record/text/plain"].strip("'")
             for o in cell["outputs"] if "scrapbook" in o.get("metadata", {})}
    return text, glued


def test_parameter_counts_match_the_configs():
    """A precondition, not a chapter test: the shape formula above reproduces the published config.json counts."""
    assert (P8, P70) == (8_030_261_248, 70_553_706_496)


@pytest.mark.parametrize("card", list(CARDS))
def test_table_row(card):
    mem, bw, flops, link = CARDS[card]
    text, _ = _outputs()
    row = next(line for line in text.splitlines() if line.startswith(card))
    floor = 2 * P8 / bw
    fits = "memory not sourced" if mem is None else f"no: {2 * P70 / (mem * 1e9):.1f}x its memory"
    expected = [f"{mem}" if mem else "-", f"{bw / 1e12:.2f}", f"{flops / 1e12:.0f}", f"{flops / bw:.0f}",
                f"{link:.0f}", f"{1e3 * floor:.1f}", f"{1 / floor:.0f}"]
    fields = re.split(r"\s{2,}", row[len(card):].strip())  # columns are at least two spaces apart
    assert fields[:4] + fields[5:5 + len(expected) - 4] == expected, row
    assert row.endswith(fits)


def test_summary_lines_and_glue():
    text, glued = _outputs()
    assert f"Llama 3 8B in bf16: {2 * P8 / 1e9:.1f} GB of weights; 70B: {2 * P70 / 1e9:.0f} GB " \
           f"(int4: {P70 / 2 / 1e9:.0f} GB)" in text
    adam = 16  # bytes a parameter: bf16 weight and gradient, fp32 master weight, two fp32 moments
    assert f"A100 80GB SXM: Adam training state alone fits {80e9 / adam / 1e9:.1f}B parameters" in text
    assert f"GeForce RTX 4090: Adam training state alone fits {24e9 / adam / 1e9:.1f}B parameters" in text
    assert f"NVLink 160 GB/s vs IB 50 GB/s = {160 / 50:.1f}x; at most 4 nodes a token -> up to " \
           f"{4 * 160 / 50:.1f} experts" in text
    assert f"H800 NVLink achievable share: 160 of 200 GB/s = {160 / 200:.0%}; throttled H800 peak 865 TFLOPS" in text
    assert f"H800 vs H100: {900 / 400:.2f}x; 70B fits 24 GB below {24e9 * 8 / P70:.1f} bits a weight; " \
           f"L40S / 4090 dense bf16: {362 / 165.2:.1f}x" in text
    assert glued == {
        "cb_gpus_4090_floor": f"{2e3 * P8 / 1008e9:.1f}",
        "cb_gpus_h100_floor": f"{2e3 * P8 / 3.35e12:.1f}",
        "cb_gpus_4090_vs_h100": f"{3.35e12 / 1008e9:.1f}",
        "cb_gpus_h800_link_share": f"{400 / 900:.0%}",
        "cb_gpus_4090_adam": f"{24e9 / 16 / 1e9:.1f}",  # 24 GB over 16 B of Adam state a parameter
        "cb_gpus_70b_int4": f"{P70 / 2 / 1e9:.0f}",
        "cb_gpus_4090_ridge": f"{165.2e12 / 1008e9:.0f}",
        "cb_gpus_h800_achieved": f"{160 / 200:.0%}",  # Insights into DeepSeek-V3 sec. 4.3
        "cb_gpus_h800_throttled": "865",  # FlashMLA deep-dive
        "cb_gpus_tp_slowdown": f"{900 / 400:.2f}",
        "cb_gpus_70b_bits": f"{24e9 * 8 / P70:.1f}",
        "cb_gpus_l40s_vs_4090": f"{362 / 165.2:.1f}",  # L40S datasheet vs Ada whitepaper
    }
    assert (glued["cb_gpus_tp_slowdown"], glued["cb_gpus_70b_bits"], glued["cb_gpus_h800_achieved"]) == \
        ("2.25", "2.7", "80%")
    assert (glued["cb_gpus_4090_floor"], glued["cb_gpus_h100_floor"], glued["cb_gpus_h800_link_share"]) == \
        ("15.9", "4.8", "44%")


def test_nothing_fits_70b_in_bf16_and_4090_misses_even_int4():
    """Every printed row says 70B in bf16 does not fit (or that the memory is not sourced), at the ratio recomputed
    here, and the glued int4 weights exceed the 4090's 24 GB."""
    text, glued = _outputs()
    for card, (mem, *_) in CARDS.items():
        row = next(line for line in text.splitlines() if line.startswith(card))
        if mem is None:
            assert row.endswith("memory not sourced"), row
        else:
            ratio = float(re.search(r"no: (\d+\.\d)x its memory$", row).group(1))
            assert ratio > 1 and f"{ratio:.1f}" == f"{2 * P70 / (mem * 1e9):.1f}", row
    assert glued["cb_gpus_70b_int4"] == f"{P70 / 2 / 1e9:.0f}"
    assert float(glued["cb_gpus_70b_int4"]) > 24 and P70 / 2 > 24e9  # int4 weights alone exceed the 4090's 24 GB


def test_prose_quotes_the_dense_not_sparse_4090_rate():
    nb = json.loads(NB.read_text())
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
                    and ("(cuda_basics-gpu-comparison)=" in "".join(c["source"]) or "cb_gpus_4090_adam" in "".join(c["source"])))
    assert "165.2/330.4" in prose and "165 dense bf16 TFLOPS" in prose
    assert "{cite:p}`nvidiaadawhitepaper{Appendix A, Table 2}`" in prose and "deepseekv3{§3.2.2}" in prose


def test_tp_claim_is_training_only():
    nb = json.loads(NB.read_text())
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
                    and "cb_gpus_4090_adam" in "".join(c["source"]))
    assert "DeepSeek avoided tensor parallelism" not in prose
    assert "trained V3 without tensor parallelism (it still serves attention with TP4)" in prose
    assert "zhao2025insights{§4.2}" in prose and "deepseekv3{§3.4}" in prose and "zhao2025insights{§4.3}" in prose
