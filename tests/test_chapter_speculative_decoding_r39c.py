"""Section speculative_decoding-three-costs: the linear layers, the attention and the all-reduces of one decode step.

Recomputes the chapter's table from primary constants, not through mha_kit: Llama 3 70B's shape (Llama 3 paper
Table 3, meta-llama sku_list: d 8192, 80 layers, 64 query and 8 KV heads of 128, d_ff 28672, vocabulary 128256),
the H100 SXM datasheet (3.35 TB/s, 989 TFLOPS bf16), NVLink 4 at 450 GB/s each way, and NCCL's tuner constants
for a ring with the LL protocol inside one node (base 6.6 us, 0.6 us a hop, 2 (n - 1) hops). Checks the printed
rows, the glued values, the claims the prose makes about them, the citations, the links and the boxes.
"""
import re

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("speculative_decoding")
BIB = (chapter_outputs.BOOK.parent / "references.bib").read_text()
LABEL = "speculative_decoding-three-costs"
D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, D_FF, VOCAB = 8192, 80, 64, 8, 128, 28672, 128256
BW, FLOPS, LINK = 3.35e12, 989e12, 450e9
TP, CTX = 8, 4096
CALL = 1e-6 * (6.6 + 2 * (TP - 1) * 0.6)  # NCCL tuning.cc, ring LL, one node of 8


def non_embedding_params():
    attention = D * HEADS * HEAD_DIM * 2 + D * KV_HEADS * HEAD_DIM * 2  # q and o, k and v
    return LAYERS * (attention + 3 * D * D_FF + 2 * D) + D + VOCAB * D  # layers, final norm, output head


WEIGHT_BYTES = 2 * non_embedding_params()  # bf16, the embedding table looked up, not read
CACHE_BYTES = 2 * 2 * LAYERS * KV_HEADS * HEAD_DIM  # bytes per cached token: k and v in bf16
ATTN_FLOPS = 2 * 2 * LAYERS * HEADS * HEAD_DIM  # per query per cached token: q k and p v, 2 FLOPs a multiply-add
RIDGE = FLOPS / BW


def costs(batch, queries):
    tokens = batch * queries
    linear = max(WEIGHT_BYTES / TP / BW, 2 * non_embedding_params() * tokens / TP / FLOPS)
    attention = max(CACHE_BYTES * batch * (CTX + queries) / TP / BW, ATTN_FLOPS * tokens * CTX / TP / FLOPS)
    ring_bytes = 2 * (TP - 1) * (tokens * D // TP) * 2  # reduce-scatter then all-gather, bf16
    allreduce = 2 * LAYERS * (CALL + ring_bytes / LINK)
    return linear, attention, allreduce


def glued(key):
    return chapter_outputs.glued(NB, key)


def ratio(batch, k):
    return sum(costs(batch, k + 1)) / sum(costs(batch, 1))


def test_table():
    text = chapter_outputs.printed(NB, "def three_costs(")
    assert f"ridge {RIDGE:.0f} FLOPs/byte; all-reduce {1e6 * CALL:.1f} us a call, {2 * LAYERS} calls a step" in text
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)ms\s+([\d.]+)ms\s+([\d.]+)ms\s+([\d.]+)ms\s+([\d.]+)\s*$",
                      text, re.M)
    want = []
    for batch in (1, 16, 64):
        for k in (0, 4, 8):
            lin, att, ar = costs(batch, k + 1)
            want.append((str(batch), str(k + 1), str(batch * (k + 1)), f"{1e3 * lin:.2f}", f"{1e3 * att:.2f}",
                         f"{1e3 * ar:.2f}", f"{1e3 * (lin + att + ar):.2f}", f"{ratio(batch, k):.2f}"))
    assert rows == want


def test_glued_and_claims():
    assert glued("sdtc_ridge") == f"{RIDGE:.0f}" == "295"
    assert glued("sdtc_calls") == str(2 * LAYERS) == "160"
    assert glued("sdtc_call_us") == "15"
    lin, att, ar = costs(1, 1)
    assert glued("sdtc_lin_b1") == f"{1e3 * lin:.2f}"
    assert glued("sdtc_att_b1") == f"{1e3 * att:.2f}"
    assert glued("sdtc_ar_b1") == f"{1e3 * ar:.2f}"
    assert 0.25 < ar / (lin + att + ar) < 0.4  # the follow-up: "a third of your batch-1 step"
    for batch in (1, 16, 64):
        for k in (4, 8):
            assert glued(f"sdtc_ratio_b{batch}_k{k}") == f"{ratio(batch, k):.2f}"
    assert ratio(1, 8) < 1.02 and ratio(16, 8) < 1.2  # "about one step" while B (k + 1) stays below the ridge
    assert 16 * 9 < RIDGE < 64 * 5 < 64 * 9 and ratio(64, 8) > 1.8  # batch 64 passes the ridge, as the prose says
    assert glued("sdtc_att_b16") == f"{1e3 * costs(16, 1)[1]:.2f}" == f"{1e3 * costs(16, 9)[1]:.2f}"
    assert glued("sdtc_ar_b16") == f"{1e3 * costs(16, 1)[2]:.2f}"
    assert glued("sdtc_ar_b16_k8") == f"{1e3 * costs(16, 9)[2]:.2f}"
    assert glued("sdtc_lin_b64_k8") == f"{1e3 * costs(64, 9)[0]:.2f}"
    assert costs(64, 9)[0] > costs(64, 1)[0] * 1.5  # compute-bound linear layers
    per_query = ATTN_FLOPS / CACHE_BYTES
    assert glued("sdtc_per_query") == f"{per_query:.0f}" == "8"  # 2 g / b for GQA: g = 8 heads a group, b = 2 bytes
    assert glued("sdtc_att_ridge_q") == f"{RIDGE / per_query:.0f}"
    alpha, k = 0.8, 4
    tokens = (1 - alpha ** (k + 1)) / (1 - alpha)  # Leviathan et al. Eq. (1)
    assert glued("sdtc_tokens") == f"{tokens:.2f}" == "3.36"
    assert glued("sdtc_ar_per_token") == f"{1e3 * costs(1, k + 1)[2] / tokens:.2f}"


def test_prose_citations_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-moe", kinds=("markdown",))
    flat = " ".join(text.split())
    assert text.startswith(f"({LABEL})=\n### ")
    assert "{cite:p}`chen2023accelerating{abstract}`" in text and re.search(r"@misc\{chen2023accelerating,", BIB)
    for phrase in ("**The linear layers**", "**The attention.**", "**The all-reduces.**", "$B(k+1)$",
                   "NCCL's tuner latency", "These are floors"):
        assert phrase in flat, phrase
    for label in ("speculative_decoding-walltime", "speculative_decoding-intensity", "tensor_parallel-all-reduce",
                  "deployment_plan-200-tokens-per-second", "deployment_plan-mbu-mfu", "speculative_decoding-scheduler"):
        assert "{ref}`" + label + "`" in text, label
    assert "In the interview" in text and text.count(":class: dropdown") == 1
    assert text.count("**Strong answer.**") == 1 and text.count("**Trap.**") == 1


@pytest.mark.parametrize("label", ["tensor_parallel-all-reduce", "deployment_plan-200-tokens-per-second",
                                   "deployment_plan-mbu-mfu", "speculative_decoding-scheduler"])
def test_linked_sections_exist(label):
    chapter = label.split("-")[0]
    assert f"({label})=" in (chapter_outputs.BOOK / f"{chapter}.ipynb").read_text(encoding="utf-8")
