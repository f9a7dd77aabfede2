"""Sections tensor_parallel-sp-norm-grads and tensor_parallel-deepspeed-autotp of "Tensor parallelism and the cache".

Under sequence parallelism the norm gains' gradients are partial sums over each rank's tokens and need one
all-reduce over the TP group a step (Megatron's finalize_model_grads). For Llama 3 8B at TP 8: 65 RMSNorm gains
of 4,096, in fp32, against one 8K micro-batch's activation collectives. DeepSpeed's AutoTP makes o_proj and
down_proj row-parallel (LinearAllreduce) and the lm_head too: for Llama 3 8B at TP 2, 2 all-reduces a layer of
d bf16 values a token plus one of the vocabulary's logits. Recomputed from the config written out, not through
mha_kit.
"""
import numpy as np

import chapter_outputs

# Llama 3 8B (config.json): 32 layers, hidden 4096, vocabulary 128256, RMSNorm without biases, no linear biases
L, D, V = 32, 4096, 128_256
NVLINK = 450e9  # bytes/s each way, NVLink 4 (H100 whitepaper: 900 GB/s bidirectional)
KIB, MIB, GIB = 2**10, 2**20, 2**30


def nb():
    return chapter_outputs.notebook("tensor_parallel")


def ring_sent(message, t):
    return 2 * (t - 1) * message // t


def test_partial_norm_gradients_sum_to_the_full_one():
    rng = np.random.default_rng(1)  # another seed and shape than the chapter's
    x, dy = rng.standard_normal((12, 5)), rng.standard_normal((12, 5))
    x_hat = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6)
    parts = [(a * b).sum(0) for a, b in zip(np.split(x_hat, 3), np.split(dy, 3))]
    assert np.allclose(sum(parts), (x_hat * dy).sum(0)) and not np.allclose(parts[0], (x_hat * dy).sum(0))
    out = chapter_outputs.printed(nb(), "sp_x_hat")
    assert "equals the full gradient: True" in out and "alone equals it: False" in out


def test_norm_all_reduce_bytes_at_tp8():
    params = (2 * L + 1) * D
    assert params == 266_240
    sent = ring_sent(4 * params, 8)
    act = ring_sent(4 * L * 8192 * D * 2, 8)  # one 8K micro-batch: 4 activation all-reduces a layer, bf16
    assert act == 14 * GIB
    got = {k: chapter_outputs.glued(nb(), k) for k in ("tpsp_norm_params", "tpsp_norm_msg", "tpsp_norm_sent",
                                                      "tpsp_ratio")}
    assert got == {"tpsp_norm_params": f"{params:,}", "tpsp_norm_msg": f"{4 * params / MIB:.1f} MiB",
                   "tpsp_norm_sent": f"{sent:,}", "tpsp_ratio": f"{act // sent:,}"}
    assert got == {"tpsp_norm_params": "266,240", "tpsp_norm_msg": "1.0 MiB", "tpsp_norm_sent": "1,863,680",
                   "tpsp_ratio": "8,065"}
    assert "931,840 bytes sent per GPU" in chapter_outputs.printed(nb(), "sp_norm_params")


def test_autotp_all_reduces_per_token_at_tp2():
    layer_msg, lm_msg = 2 * D, 2 * V
    per_token = 2 * L * layer_msg + lm_msg
    assert per_token == 780_800 and ring_sent(per_token, 2) == per_token
    want = {"tpat_calls": str(2 * L + 1), "tpat_layer_msg": f"{layer_msg // KIB} KiB",
            "tpat_lm_msg": f"{lm_msg / KIB:.1f} KiB", "tpat_per_token": f"{per_token / KIB:.1f} KiB",
            "tpat_lm_share": f"{lm_msg / (2 * L * layer_msg):.0%}", "tpat_bw_us": f"{1e6 * per_token / NVLINK:.1f}"}
    got = {k: chapter_outputs.glued(nb(), k) for k in want}
    assert got == want == {"tpat_calls": "65", "tpat_layer_msg": "8 KiB", "tpat_lm_msg": "250.5 KiB",
                           "tpat_per_token": "762.5 KiB", "tpat_lm_share": "49%", "tpat_bw_us": "1.7"}
    fixed = float(chapter_outputs.glued(nb(), "tpat_fixed_us"))
    assert 5 < fixed < 15  # NCCL's per-call fixed cost is microseconds, several times the bytes' time here
    assert chapter_outputs.glued(nb(), "tpat_fixed_total_us") == f"{65 * fixed:.0f}"
    assert 65 * fixed > 100 * 1e6 * per_token / NVLINK


def test_sections_cite_and_link():
    sp = chapter_outputs.section(nb(), "tensor_parallel-sp-norm-grads", end="tensor_parallel-2d-weight-stationary")
    for key in ("megatronspnorm{", "megatronfinalizegrads{", "korthikanti2022reducing{§4.2.2}",
                "shoeybi2019megatron{§3}", "dsautotpsrc{auto_tp.py, AutoTP.register_replicated_grad_hooks}"):
        assert key in sp
    assert "_allreduce_layernorm_grads" in sp and "sequence_parallel" in sp
    assert "{ref}`tensor_parallel-backward-collectives`" in sp
    # flash-attention's own mechanism, the SUM + AVG calls, and the order after the DP sync (cold32)
    assert "flashattnspgrad{flash_attn/utils/distributed.py, allreduce_sequence_parallel_grad" in sp
    assert "p._sequence_parallel = True" in sp and "average_gradients_across_tp_domain" in sp
    assert "overlap_grad_reduce" in sp and "both wrong and inconsistent" in sp
    at = chapter_outputs.section(nb(), "tensor_parallel-deepspeed-autotp", end="tensor_parallel-pp-memory")
    for key in ("dsautotp_tutorial{Introduction}", "dsautotpsrc{auto_tp.py, AutoTP.tp_parser, AutoTP._replace}",
                "dslayerssrc{", "dsreplacemodule{", "dsinjecttp{"):
        assert key in at
    for name in ("LinearAllreduce", "LmHeadLinearAllreduce", "o_proj", "down_proj", "replace_with_kernel_inject"):
        assert name in at
    # inference_all_reduce is the CPU shm op when registered, else plain torch.distributed.all_reduce (cold32 MUST)
    assert "dscommtorch{deepspeed/comm/torch.py, TorchBackend.inference_all_reduce" in at
    assert "shm_interface.cpp" in at and "torch.distributed.all_reduce" in at
    assert "has a separate `inference_all_reduce` entry point for these calls" not in at
    assert "dsinferengine{" in at and "LlamaRMSNorm" in at
    assert at.index("`RowParallel.forward`") < at.index("**Which layers become which.**")
    for text in (sp, at):
        assert ":class: dropdown" in text and "In the interview" in text
