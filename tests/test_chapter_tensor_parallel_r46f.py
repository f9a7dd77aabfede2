"""Three additions to the tensor-parallel chapter, recomputed from the shapes and the sources' constants, not
through mha_kit.

* tensor_parallel-move-activations: training state (mixed-precision Adam, 16 bytes a parameter, ZeRO paper
  §3.1) against serving state at TP 8 for Llama 3 70B (config.json: d 8192, d_ff 28672, 80 layers, 64 query and
  8 KV heads of 128, vocabulary 128,256, untied embeddings), and the training-against-inference table's links.
* tensor_parallel-one-matmul: the FP16 bytes of A (m, k), W (k, n) and Y (m, n), the bytes each of two GPUs
  holds under a pipeline and under column- and row-split tensor parallelism, and the collective each sends.
* tensor_parallel-links: TCP's latency from HomaModule's perf.txt (items 31, 32 and 47), summed here from the
  timeline's own numbers."""
import re

import pytest

import chapter_outputs

D, F, L, H, KV, HD, V = 8192, 28672, 80, 64, 8, 128, 128256
HBM, PEAK, NVLINK = 80e9, 989e12, 450e9  # H100 SXM datasheet; NVLink 4 one way
GB = 1e9


def params_70b():
    attn = D * (H * HD) + 2 * D * (KV * HD) + (H * HD) * D  # q, k, v, o
    per_layer = attn + 3 * D * F + 2 * D  # SwiGLU and two RMSNorm weights
    return L * per_layer + 2 * V * D + D  # untied embedding and LM head, final norm


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("tensor_parallel")


def test_llama_70b_parameter_count_is_the_published_shape():
    assert params_70b() == 70_553_706_496


def test_training_against_serving_state(nb):
    p = params_70b()
    out = chapter_outputs.printed(nb, "train_state = {")
    ddp, zero3 = 16 * p, 16 * p / 8
    weights = 2 * (p // 8)
    cache = 64 * 8192 * L * 2 * (KV // 8) * HD * 2  # 64 sequences of 8K, one KV head a GPU, K and V in bf16
    assert cache == 21_474_836_480  # exact bytes
    assert re.search(rf"plain data parallel\s+{ddp / GB:,.1f} GB a GPU", out)
    assert re.search(rf"ZeRO-3 over 8 GPUs\s+{zero3 / GB:,.1f} GB a GPU", out)
    assert f"{(weights + cache) / GB:,.1f} GB a GPU ({weights / GB:,.1f} GB weights + {cache / GB:,.1f} GB cache)" in out
    assert chapter_outputs.glued(nb, "tp_train_zero3_gb") == f"{zero3 / GB:,.1f} GB" == "141.1 GB"
    assert zero3 > HBM > weights + cache  # the prose: training state alone overflows an H100, serving does not


def test_training_table_links_and_citation(nb):
    text = chapter_outputs.section(nb, "tensor_parallel-move-activations", end="tensor_parallel-decode-bound")
    for ref in ("tensor_parallel-zero", "tensor_parallel-cache-per-gpu", "tensor_parallel-pp-activation-memory",
                "tensor_parallel-fsdp-batch", "tensor_parallel-backward-collectives", "tensor_parallel-decode-bound",
                "tensor_parallel-ddp-buckets", "tensor_parallel-1f1b-dualpipe", "tensor_parallel-pipeline-bubble",
                "tensor_parallel-ep-layouts", "tensor_parallel-scaling-bottleneck"):
        assert "{ref}`" + ref + "`" in text and ref in chapter_outputs.book_labels(), ref
    assert text.count("\n| ") >= 8  # header, rule and seven rows
    chapter_outputs.assert_cited(text, ["rajbhandari2020zero"])


CASES = {"Llama 3 70B up-projection, 8K tokens": (8192, D, F), "square, m = k = n = 131,072": (131072,) * 3}


@pytest.mark.parametrize("name", CASES)
def test_one_matmul_bytes_per_gpu_and_collectives(nb, name):
    m, k, n = CASES[name]
    a, w, y = 2 * m * k, 2 * k * n, 2 * m * n
    math_ms = 1e3 * 2 * m * k * n / PEAK
    out = chapter_outputs.printed(nb, "mm_cases = {")
    block = out.split(name + ":")[1].split("\n   ")[1:5]
    held = {"one GPU": a + w + y, "columns, Y sharded": a + w / 2 + y / 2, "columns, Y gathered": a + w / 2 + y,
            "rows": a / 2 + w / 2 + y}  # a gathered Y is whole on each GPU
    sent = {"columns, Y gathered": y / 2, "rows": 2 * (2 - 1) / 2 * y}  # all-gather (t-1)/t of Y, ring all-reduce 2(t-1)/t
    for line, (key, nbytes) in zip(block, held.items()):
        assert f"{nbytes / GB:,.1f} GB a GPU, fits in 80 GB: {nbytes <= HBM!s:<5}" in line, line
        ms = math_ms if key == "one GPU" else math_ms / 2
        assert f" {ms:,.1f} ms of math" in line
        if key in sent:
            assert f"({1e3 * sent[key] / NVLINK:,.1f} ms)" in line


def test_one_matmul_glued_values(nb):
    m = 131072
    assert chapter_outputs.glued(nb, "mm_big_gb") == f"{3 * 2 * m * m / GB:.1f} GB" == "103.1 GB"
    assert chapter_outputs.glued(nb, "mm_big_tp_gb") == f"{2 * 2 * m * m / GB:.1f} GB" == "68.7 GB"
    assert chapter_outputs.glued(nb, "mm_big_gather_gb") == f"{(2 + 1 + 2) * m * m / GB:.1f} GB" == "85.9 GB"
    assert 2 * 2 * m * m < HBM < 5 * m * m  # sharded Y fits, gathered Y does not
    assert chapter_outputs.glued(nb, "mm_pp_bubble") == "50%"  # (p - 1) / (m + p - 1), p = 2, one batch
    m, k, n = CASES["Llama 3 70B up-projection, 8K tokens"]
    share = (2 * m * n / NVLINK) / (2 * m * k * n / PEAK / 2)
    assert chapter_outputs.glued(nb, "mm_comm_proj") == f"{share:.0%}"
    # Megatron's MLP: up and gate by columns, down by rows, one ring all-reduce of m x d at t = 2
    ar = 2 * m * k / NVLINK
    up_down, with_gate = ar / (4 * m * k * n / PEAK / 2), ar / (6 * m * k * n / PEAK / 2)
    assert chapter_outputs.glued(nb, "mm_comm_mlp") == f"{with_gate:.0%} to {up_down:.0%}" == "5% to 8%"
    assert share > 5 * up_down
    text = chapter_outputs.section(nb, "tensor_parallel-one-matmul", end="tensor_parallel-pp-phase-bubbles")
    assert "{ref}`tensor_parallel-all-reduce`" in text and "In the interview" in text
    chapter_outputs.assert_cited(text, ["shoeybi2019megatron", "nvidiah100"])


def test_tcp_latency_from_the_homa_timeline(nb):
    send, recv, wire = (1475, 1710), (3220, 3080), 2805  # ns, perf.txt item 32 (server, client)
    rtt = sum(send) + sum(recv) + 2 * wire
    assert abs(rtt - 15100) < 10  # the table's own "RTT Total"
    out = chapter_outputs.printed(nb, "send_ns = {")
    assert f"{rtt / 1e3:.1f} us round trip, {(rtt - 2 * wire) / 1e3:.1f} us of it in host software" in out
    assert "median 109 to 386 us, P99 2.1 to 5.1 ms" in out  # item 31, TCP, W2..W5
    assert chapter_outputs.glued(nb, "tp_tcp_rtt_us") == "15"
    tcp_rtt, homa_rtt, net = (23.3, 38.7), (14.5, 23.2), 2.7  # item 47; NCCL's network step, one way
    assert chapter_outputs.glued(nb, "tp_tcp_rtt_intel") == "23" and chapter_outputs.glued(nb, "tp_tcp_rtt_amd") == "39"
    assert chapter_outputs.glued(nb, "tp_homa_rtt_best") == "14.5"
    assert chapter_outputs.glued(nb, "tp_tcp_oneway_x") == f"{min(homa_rtt) / 2 / net:.0f} to {min(tcp_rtt) / 2 / net:.0f}"
    assert chapter_outputs.glued(nb, "tp_tcp_loaded_x") == f"{108.8 / net:.0f} to {385.7 / net:.0f}" == "40 to 143"
    assert chapter_outputs.glued(nb, "tp_homa_p50_us") == "31 to 55"
    text = chapter_outputs.section(nb, "tensor_parallel-links")
    assert "round trip is about {glue:text}`tp_tcp_rtt_intel` µs" in text  # the interview answer
    assert "TCP included" not in text and "a hundred or more" not in text
    chapter_outputs.assert_cited(text, ["homaperf"])
