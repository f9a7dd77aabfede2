"""Section tradeoffs-which-variant of "Trade-offs": where MHA, GQA, MQA and MLA are used, and the rule for choosing.

The cache per token of the shipped models, the Llama 3 8B sequences that fit beside the weights on one H100, and the
cache per GPU under tensor parallelism, recomputed from the shapes written out below (papers and config.json files,
as the records cite them) and the datasheet's 80 GB, not through mha_kit's counting, then compared with what the
chapter's cells printed and glued.
"""
import re

import pytest
import chapter_outputs

NB = chapter_outputs.notebook("tradeoffs")
LABEL = "tradeoffs-which-variant"

# title: (query heads h, key-value heads h_kv or None for a latent, layers L, head size d_h or MLA's d_c + d_h^R)
SHAPES = {
    "Transformer (base)": (8, 8, 6, 64),  # arXiv:1706.03762 §3.2.2, the 6 decoder layers
    "GPT-2 small": (12, 12, 12, 64),  # openai-community/gpt2 config
    "Falcon-7B": (71, 1, 32, 64),  # tiiuae/falcon-7b config.json, multi_query=true
    "Llama 3 8B": (32, 8, 32, 128),  # meta-llama/Meta-Llama-3-8B config.json
    "Mistral 7B": (32, 8, 32, 128),  # arXiv:2310.06825 Table 1
    "Llama 3 70B": (64, 8, 80, 128),  # meta-llama/Meta-Llama-3-70B config.json
    "Falcon-40B": (128, 8, 60, 64),  # tiiuae/falcon-40b config.json
    "DeepSeek-V2": (128, None, 60, 512 + 64),  # arXiv:2405.04434 §3.1.2
    "DeepSeek-V3": (128, None, 61, 512 + 64),  # arXiv:2412.19437 §4.2
}
BF16 = 2
H100_HBM = 80 * 10**9  # H100 SXM datasheet, 80 GB
# Llama 3 8B: d, h, h_kv, d_h, L, d_ff, V, context (config.json)
D8, H8, KV8, HD8, L8, FF8, V8, CTX8 = 4096, 32, 8, 128, 32, 14336, 128256, 8192


def glued(key):
    return chapter_outputs.glued(NB, key)


def per_token(h, h_kv, layers, width):
    """Bytes one token caches over all layers in bf16: 2 h_kv d_h per layer, or the latent and rotary key."""
    per_layer = width if h_kv is None else 2 * h_kv * width
    return per_layer * layers * BF16


def variant(h, h_kv):
    if h_kv is None:
        return "MLA"
    return "MHA" if h_kv == h else ("MQA" if h_kv == 1 else f"GQA-{h_kv}")


def test_shipped_models_table():
    printed = chapter_outputs.printed(NB, "WV_MODELS = (")
    for title, (h, h_kv, layers, width) in SHAPES.items():
        want = per_token(h, h_kv, layers, width)
        line = next(line for line in printed.splitlines() if line.startswith(title + " "))
        cols = line[len(title):].split()
        assert cols[0] == str(h) and cols[2] == variant(h, h_kv), line
        assert cols[1] == (str(h_kv) if h_kv else "512+64"), line
        assert cols[3] == f"{want:,}", line  # exact integer bytes
    assert (per_token(*SHAPES["Falcon-7B"]), per_token(*SHAPES["Llama 3 70B"]),
            per_token(*SHAPES["DeepSeek-V2"])) == (8 * 1024, 320 * 1024, 69_120)
    assert [glued(k) for k in ("tr_wv_falcon7b", "tr_wv_llama370b", "tr_wv_deepseekv2")] == \
        ["8 KiB", "320 KiB", "67.5 KiB"]
    assert glued("tr_wv_falcon_h") == "71"


def test_records_by_variant():
    printed = chapter_outputs.printed(NB, "WV_MODELS = (")
    rows = dict(re.findall(r"^all (\w+) records: (.*)$", printed, re.M))
    assert rows["MHA"] == "Transformer (base), GPT-2 small" and rows["MQA"] == "Falcon-7B"
    assert rows["MLA"] == "DeepSeek-V2, DeepSeek-V2-Lite, DeepSeek-V3"
    gqa = rows["GQA"].split(", ")
    assert {"Llama 3 8B", "Llama 3 70B", "Mistral 7B", "Falcon-40B", "Gemma 2 9B"} <= set(gqa)
    total = sum(len(r.split(", ")) for r in rows.values())
    assert (glued("tr_wv_gqa_count"), glued("tr_wv_count")) == (str(len(gqa)), str(total)) == ("10", "16")


def llama8b_params(h_kv):
    attention = D8 * H8 * HD8 + 2 * D8 * h_kv * HD8 + H8 * HD8 * D8  # W_q, W_k, W_v, W_o, no biases
    return 2 * V8 * D8 + L8 * (attention + 3 * D8 * FF8 + 2 * D8) + D8  # untied head, RMSNorm weights


def test_sequences_that_fit_beside_the_weights():
    assert llama8b_params(KV8) == 8_030_261_248  # Llama 3 8B's published count rounds to 8.0B
    fits = {h_kv: (H100_HBM - BF16 * llama8b_params(h_kv)) // (2 * h_kv * HD8 * L8 * BF16 * CTX8)
            for h_kv in (H8, KV8, 1)}
    assert fits == {32: 14, 8: 59, 1: 479}
    assert [glued(f"tr_wv_fit_{k}") for k in ("mha", "gqa", "mqa")] == ["14", "59", "479"]
    printed = chapter_outputs.printed(NB, "wv_fits = {}")
    assert "GQA-8  weights 16.06 GB, left 63.94 GB" in printed and "14 sequences fit" in printed


def kib_per_gpu(h_kv, tp, layers=80, d_h=128):
    """KiB one GPU caches per token: max(h_kv / t, 1) heads; a latent (h_kv None) whole on every rank."""
    per_layer = 576 if h_kv is None else 2 * max(h_kv // tp, 1) * d_h
    return per_layer * layers * BF16 / 1024


@pytest.mark.parametrize("label, h_kv, layers", [("MHA (h_kv=64)", 64, 80), ("GQA-8 (h_kv=8)", 8, 80),
                                                  ("MQA (h_kv=1)", 1, 80), ("DeepSeek-V2 MLA", None, 60)])
def test_cache_per_gpu_under_tensor_parallelism(label, h_kv, layers):
    printed = chapter_outputs.printed(NB, "WV_TP = (")
    line = next(line for line in printed.splitlines() if line.startswith(label))
    got = re.findall(r"([\d,.]+) KiB", line)
    want = [kib_per_gpu(h_kv, tp, layers) for tp in (1, 2, 4, 8, 16)]
    assert [float(g.replace(",", "")) for g in got] == want


def test_tp_claims():
    assert kib_per_gpu(8, 16) == kib_per_gpu(8, 8) == kib_per_gpu(1, 8) == 40  # replicated past h_kv
    assert kib_per_gpu(1, 1) < kib_per_gpu(8, 1)  # MQA saves only where t < h_kv
    assert (glued("tr_wv_tp8"), glued("tr_wv_mha_tp8")) == ("40 KiB", "320 KiB")


def test_data_parallel_attention():
    """Batch-sharded attention: an MQA token cached once on one GPU against GQA-8's token spread over TP8."""
    node_gqa = kib_per_gpu(8, 8) * 8  # every GPU holds its share of each token's heads
    mqa_once = kib_per_gpu(1, 1)  # the whole token, on the one GPU that holds the sequence
    assert (node_gqa, mqa_once) == (320, 40)
    ratio = node_gqa / mqa_once
    assert ratio == 8 and glued("tr_wv_dp_ratio") == f"{ratio:.0f}" and glued("tr_wv_mqa_dp") == "40 KiB"
    printed = chapter_outputs.printed(NB, "WV_TP = (")
    assert "GQA-8 at TP8 320 KiB, MQA with data-parallel attention 40 KiB: 8x the cached tokens" in printed


def test_section_place_citations_and_links():
    text = chapter_outputs.section(NB, LABEL, end="## Summary")
    sources = ["".join(c["source"]) for c in NB["cells"]]
    assert sources.index(next(s for s in sources if s.startswith(f"({LABEL})="))) < \
        sources.index(next(s for s in sources if s.startswith("(tradeoffs-chain)=")))
    for cite in ("llama2modelcard{Model Details table}", "gemmapytorchconfig{get_config_for_2b}",
                 "chowdhery2022palm{§2, Multi-Query Attention}", "touvron2023llama2{App. A.2.1, Table 18, Fig. 24}", "touvron2023llama2{App. A.2.1, Fig. 24}",
                 "pope2022efficiently", "llama3_8b_config{config.json}", "deepseekv2{App. D.1, Table 8}",
                 "ainslie2023gqa{§2.2}", "flashmladeepdive{A Theoretical Analysis of the MLA Algorithm}"):
        assert cite in text
    for ref in ("tradeoffs-gqa-vs-mqa", "why_several_heads-tensor-parallel", "mla_serving-own-kernels",
                "tradeoffs-quality", "tradeoffs-mean-pool"):
        assert f"{{ref}}`{ref}`" in text
    assert "Not with attention sharded by heads" in text and "data-parallel attention" in text
    assert text.count(":class: dropdown\n") == 2 and "followup" not in text  # the chapter-end chain keeps three
    assert sum(s.count(":class: dropdown followup") for s in sources) == 3
