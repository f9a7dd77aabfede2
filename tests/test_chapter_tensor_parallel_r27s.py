"""Section tensor_parallel-backward-collectives of "Tensor parallelism and the cache".

Megatron's conjugate operators f and g: one TP block all-reduces its (b, s, h) activation once forward and once
backward, four all-reduces a layer in a training step. For Llama 3 8B at TP 8, one micro-batch of one 8,192-token
sequence in bf16, against DDP's bf16 gradients, each a ring over 8 GPUs (bandwidth term 2 (t - 1) / t * M / B) at
NVLink 4's 450 GB/s and one 400 Gb/s NIC's 50 GB/s. Recomputed from the config written out, not through mha_kit.
"""
import chapter_outputs

# Llama 3 8B (config.json): 32 layers, d 4096, 32 query heads and 8 KV heads of 128, d_ff 14336, vocabulary 128256
L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PSI = 2 * V * D + L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF + 2 * D) + D
B, S, T = 1, 8192, 8
NVLINK, NIC = 450e9, 50e9  # bytes/s each way: H100 whitepaper (900 GB/s bidirectional); 400 Gb/s
PEAK = 989e12  # H100 SXM bf16 dense FLOP/s (datasheet)
ACT = B * S * D * 2  # one all-reduce message, bytes
MIB, GIB = 2**20, 2**30


def nb():
    return chapter_outputs.notebook("tensor_parallel")


def ring_ms(message, bw):
    return 1e3 * 2 * (T - 1) / T * message / bw


def test_parameter_count_matches_the_config():
    assert PSI == 8_030_261_248


def test_bytes_per_layer_and_micro_batch():
    assert ACT == 64 * MIB
    per_layer = 4 * ACT  # attention and MLP, each g forward + f backward
    sent_layer = 2 * (T - 1) * per_layer // T
    sent_step = L * sent_layer
    assert sent_layer == 448 * MIB and sent_step == 14 * GIB
    got = [chapter_outputs.glued(nb(), k) for k in ("tpb_msg", "tpb_layer_sent", "tpb_step_sent", "tpb_calls")]
    assert got == ["64 MiB", "448 MiB", "14 GiB", str(4 * L)] == ["64 MiB", "448 MiB", "14 GiB", "128"]
    out = chapter_outputs.printed(nb(), "TP 8, one micro-batch")
    assert "8 GiB" in out and "14 GiB" in out


def test_times_over_nvlink_and_one_nic():
    tp, ddp = 4 * L * ACT, 2 * PSI
    want = {"tpb_tp_nv_ms": f"{ring_ms(tp, NVLINK):.1f}", "tpb_tp_nic_ms": f"{ring_ms(tp, NIC):.0f}",
            "tpb_ddp_nv_ms": f"{ring_ms(ddp, NVLINK):.1f}", "tpb_ddp_nic_ms": f"{ring_ms(ddp, NIC):.0f}"}
    got = {k: chapter_outputs.glued(nb(), k) for k in want}
    assert got == want == {"tpb_tp_nv_ms": "33.4", "tpb_tp_nic_ms": "301", "tpb_ddp_nv_ms": "62.5",
                           "tpb_ddp_nic_ms": "562"}
    assert chapter_outputs.glued(nb(), "tpb_ddp_bytes") == f"{ddp / 1e9:.1f} GB" == "16.1 GB"
    compute = 1e3 * 6 * PSI * B * S / T / PEAK
    assert chapter_outputs.glued(nb(), "tpb_compute_ms") == f"{compute:.0f}" == "50"
    # over one NIC TP's traffic is several times the compute; over NVLink it is below it
    assert ring_ms(tp, NIC) > 5 * compute and ring_ms(tp, NVLINK) < compute
    assert ddp > tp  # DDP's gradients outweigh one micro-batch of TP traffic, but are paid once a step


def test_attention_flops_and_per_token_ratio():
    six_n = 6 * PSI
    attn = 12 * L * S * D  # QK^T and PV: 2*s*d FLOPs per token per layer each forward, x3 with the backward
    full, causal = (1e3 * (six_n + a) * B * S / T / PEAK for a in (attn, attn / 2))
    want = {"tpb_attn_pct": f"{attn / six_n:.0%}", "tpb_attn_causal_pct": f"{attn / 2 / six_n:.0%}",
            "tpb_full_ms": f"{full:.0f}", "tpb_causal_ms": f"{causal:.0f}",
            "tpb_mfu_lo_ms": f"{causal / 0.5:.0f}", "tpb_mfu_hi_ms": f"{full / 0.4:.0f}"}
    got = {k: chapter_outputs.glued(nb(), k) for k in want}
    assert got == want == {"tpb_attn_pct": "27%", "tpb_attn_causal_pct": "13%", "tpb_full_ms": "63",
                           "tpb_causal_ms": "57", "tpb_mfu_lo_ms": "113", "tpb_mfu_hi_ms": "158"}
    tp_per_token = 2 * (T - 1) / T * 4 * L * ACT / (B * S)
    ddp_per_token = 2 * (T - 1) / T * 2 * PSI / (T * B * S)  # DDP 8: one 8K sequence per GPU per step
    assert chapter_outputs.glued(nb(), "tpb_per_token_ratio") == f"{tp_per_token / ddp_per_token:.1f}" == "4.3"
    assert chapter_outputs.glued(nb(), "tpb_recompute_calls") == str(6 * L) == "192"


def test_section_links_and_sources():
    text = chapter_outputs.section(nb(), "tensor_parallel-backward-collectives",
                                   end="tensor_parallel-2d-weight-stationary")
    for key in ("shoeybi2019megatron{§3, Figure 3}", "shoeybi2019megatron{§3, Figure 4}",
                "korthikanti2022reducing{§4.2.2}", "pytorchtpstyle{", "pytorchtpexample{", "pytorchddp{",
                "narayanan2021megatron{§3.3-3.4", "megatronasyncdgrad{", "pytorchtpmissingbwd{",
                "kaplan2020scaling{", "korthikanti2022reducing{§5}"):
        assert key in text
    for ref in ("tensor_parallel-ddp-buckets", "tensor_parallel-all-reduce", "tensor_parallel-ring-tree", "tensor_parallel-links",
                "tensor_parallel-scaling-bottleneck", "tensor_parallel-ag-gemm"):
        assert "{ref}`" + ref + "`" in text
    assert "identity in the forward pass, all-reduce in the backward" in text
    assert "_FromTorchTensor.backward" in text and "requires_grad" in text
    assert "no_sync()" in text and "once per global batch, not once per micro-batch" not in text
    assert "six a layer" in text and 'device="cuda"' not in text
    assert ":class: dropdown" in text and "In the interview" in text
