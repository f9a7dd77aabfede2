"""Section disaggregated_serving-move, two additions: the move-or-recompute break-even rate (cache bytes per
second of prefill at the H100's bf16 peak and at half of it), and a 2,048-token Llama 3 70B prompt's transfer
against the prefill it spares, with the cases where disaggregation is the wrong answer. Recomputed from Llama 3
8B and 70B's shapes (config.json) and the datasheets' rates, not through mha_kit."""
import pytest

import chapter_outputs

PEAK, NDR, TCP, TP = 989e12, 50e9, 10e9 / 8, 8  # H100 bf16 dense; 400 Gb/s port; one 10 Gb/s stream; DGX H100
MODELS = {  # d, d_ff, layers, query heads, KV heads, head size, vocabulary
    "Llama 3 8B": (4096, 14336, 32, 32, 8, 128, 128256),
    "Llama 3 70B": (8192, 28672, 80, 64, 8, 128, 128256),
}


def kv_bytes(name, tokens):
    _, _, layers, _, kv, hd, _ = MODELS[name]
    return tokens * 2 * layers * kv * hd * 2  # K and V, bf16


def prefill_flops(name, n):
    d, f, layers, h, kv, hd, v = MODELS[name]
    per_token = layers * (d * h * hd * 2 + 2 * d * kv * hd + 3 * d * f)  # q and o, k and v, SwiGLU
    return 2 * n * per_token + 2 * v * d + layers * 2 * h * hd * n * (n + 1)  # last token's logits, causal attention


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("disaggregated_serving")


def test_break_even_rates(nb):
    out = chapter_outputs.printed(nb, "MHA_FACTOR = ")
    rates = {name: kv_bytes(name, 8192) / (prefill_flops(name, 8192) / PEAK) for name in MODELS}
    rates["Llama 3 70B with an MHA cache"] = 64 // 8 * rates["Llama 3 70B"]
    for name, rate in rates.items():
        assert f"{name:<30} break-even {rate / 1e9:5.1f} GB/s at the peak, {rate / 2e9:5.1f} GB/s at 50% MFU" in out
    assert chapter_outputs.glued(nb, "ds_be_mha") == f"{rates['Llama 3 70B with an MHA cache'] / 1e9:.1f}"
    assert chapter_outputs.glued(nb, "ds_be_70b_half") == f"{rates['Llama 3 70B'] / 2e9:.1f}" == "1.1"
    # the prose's comparisons: a 10 Gb/s stream loses to a peak-rate recompute for all three, and is within
    # 15% of the 70B's break-even at 50% MFU; one NVMe drive (8 GB/s) about ties with the 8B at the peak
    assert all(TCP < rate for rate in rates.values())
    assert abs(TCP / (rates["Llama 3 70B"] / 2) - 1) < 0.15
    assert abs(8e9 / rates["Llama 3 8B"] - 1) < 0.02


def test_2k_prompt_transfer(nb):
    kv = kv_bytes("Llama 3 70B", 2048)
    assert kv == 640 * 2**20  # exact: 320 KiB a token
    prefill = prefill_flops("Llama 3 70B", 2048) / (TP * PEAK)
    out = chapter_outputs.printed(nb, "SHORT = 2048")
    assert f"640 MiB of cache; prefill at least {1e3 * prefill:.1f} ms on 8 GPUs" in out
    for label, rate in (("one NDR port", NDR), ("TP 8, an NDR port a GPU", TP * NDR), ("a 10 Gb/s TCP stream", TCP),
                        ("100 GbE, several TCP streams", 100e9 / 8)):
        assert f"over {label:<28}{1e3 * kv / rate:8.1f} ms = {kv / rate / prefill:6.1%} of the prefill" in out
    assert chapter_outputs.glued(nb, "ds_2k_ndr_ms") == f"{1e3 * kv / NDR:.1f}" == "13.4"
    assert chapter_outputs.glued(nb, "ds_2k_tp_ms") == f"{1e3 * kv / NDR / TP:.1f}" == "1.7"
    assert chapter_outputs.glued(nb, "ds_2k_tcp_ms") == f"{1e3 * kv / TCP:.0f}"
    assert chapter_outputs.glued(nb, "ds_2k_tcp_x") == f"{kv / TCP / prefill:.0f}"
    assert chapter_outputs.glued(nb, "ds_2k_be_node") == f"{kv / prefill / 1e9:.1f}" == "18.6"  # one link, whole node
    assert chapter_outputs.glued(nb, "ds_2k_tcp100_ms") == f"{1e3 * kv / 12.5e9:.0f}"
    assert kv / 12.5e9 > prefill  # even a full 100 GbE NIC loses to the prefill


def test_wrong_answer_cases_link_their_sections(nb):
    text = chapter_outputs.section(nb, "disaggregated_serving-move", end="disaggregated_serving-kv-connector")
    for ref in ("disaggregated_serving-offload", "scheduler_design-preemption", "tensor_parallel-links",
                "disaggregated_serving-ratio", "disaggregated_serving-why", "disaggregated_serving-prefix-both-sides"):
        assert "{ref}`" + ref + "`" in text and ref in chapter_outputs.book_labels(), ref
    for case in ("**No RDMA between the pools.**", "**Short prompts and long outputs at modest rates.**",
                 "**No latency targets.**"):
        assert case in text
    chapter_outputs.assert_cited(text, ["vllmdisagg", "lmsys2025largeep"])
    assert "per prefill GPU" in text and "{glue:text}`ds_2k_be_node`" in text and "320 KiB" not in text
