"""Section tensor_parallel-deepspeed-modes of "Tensor parallelism and the cache".

DeepSpeed's parallel modes, and two numbers for Llama 3 70B on 64 GPUs (eight nodes of eight): model state per
GPU under ZeRO-3 and under ZeRO-Infinity's offloads, and the communication volume a step under ZeRO-3 against
ZeRO++ (the DeepSpeed ZeRO++ blog's table: M, M, M against 0.5M, 0, 0.25M). Recomputed from the config's shape
written out, not through mha_kit.
"""
import chapter_outputs

# Llama 3 70B (config.json): 80 layers, d 8192, 64 query heads and 8 KV heads of 128, d_ff 28672, vocabulary 128256
L, D, H, KV, HD, FF, V = 80, 8192, 64, 8, 128, 28_672, 128_256
PER_LAYER = D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF + 2 * D  # q, k, v, o, SwiGLU, two RMSNorms
PSI = 2 * V * D + L * PER_LAYER + D  # embeddings, untied head, final norm
N_GPU, PER_NODE = 64, 8
M = 2 * PSI  # the model in 16-bit bytes


def gb(nbytes):
    return f"{nbytes / 1e9:,.1f} GB"


def nb():
    return chapter_outputs.notebook("tensor_parallel")


def test_parameter_count_matches_the_config():
    assert PSI == 70_553_706_496


def test_memory_per_gpu():
    zero3 = 16 * PSI // N_GPU  # (2 + 2 + 12) bytes a parameter, all sharded
    opt_off = 2 * PSI // N_GPU  # optimizer offload takes the gradients too: only the 16-bit weight shard stays
    layer = 2 * PER_LAYER  # one gathered layer in bf16
    host_node = PER_NODE * (14 * PSI // N_GPU)  # fp32 state + 16-bit gradients, a lower bound
    live = 2 * 10**9  # the ZeRO tutorial's stage3_max_live_parameters = 1e9, in bf16
    keys = ("tp_ds_zero3", "tp_ds_opt_off", "tp_ds_layer", "tp_ds_host_node", "tp_ds_live")
    got = [chapter_outputs.glued(nb(), k) for k in keys]
    assert got[:4] == [gb(zero3), gb(opt_off), gb(layer), gb(host_node)]
    assert got == ["17.6 GB", "2.2 GB", "1.7 GB", "123.5 GB", "2 GB"]
    assert live / 1e9 == 2
    assert zero3 == 8 * opt_off  # offloading optimizer and gradients keeps an eighth of ZeRO-3's share
    assert live > layer  # the tutorial's live-parameter window is more than one Llama 3 70B layer


def test_zeropp_communication():
    zero3 = M + M + M
    zeropp = M // 2 + 0 + M // 4  # INT8 weights, no cross-node backward gather (hpZ), INT4 gradients
    assert abs(zero3 / zeropp - 4) < 1e-9
    hpz = M // PER_NODE
    got = [chapter_outputs.glued(nb(), k) for k in ("tp_ds_zero3_comm", "tp_ds_zeropp_comm", "tp_ds_hpz")]
    assert got == [gb(zero3), gb(zeropp), gb(hpz)] == ["423.3 GB", "105.8 GB", "17.6 GB"]
    assert hpz == 16 * PSI // N_GPU  # on 8 x 8 GPUs hpZ's copy equals ZeRO-3's own share
    out = chapter_outputs.printed(nb(), "ZeRO-3 / ZeRO++")
    assert "4x" in out


def test_section_links_and_sources():
    text = chapter_outputs.section(nb(), "tensor_parallel-deepspeed-modes", end="tensor_parallel-pp-memory")
    for ref in ("tensor_parallel-zero", "context_parallelism-ulysses", "tensor_parallel-pipeline-bubble",
                "tensor_parallel-ep-layouts", "tensor_parallel-all-reduce"):
        assert "{ref}`" + ref + "`" in text
    for key in ("wang2023zeropp", "rajbhandari2021zeroinfinity", "dszeropp_blog", "dspipeline_tutorial",
                "dsautotp_tutorial", "dsmoe_tutorial", "dsfastgen_blog", "jacobs2023ulysses"):
        assert key + "{" in text
    assert "rajbhandari2020zero{§7.2}" in text and "ren2021zerooffload{§3}" in text
    assert "only the 16-bit weight shard stays" in text and "ZeRO stage 0, 1 or 2, not ZeRO-3" in text
    # cold review 31: DeepSpeed-MoE is not ZeRO-3 compatible; CP shards the whole sequence; 3M is a per-GPU total
    assert "dsengine_moe_zero3{" in text and "MoE not supported with Stage 3" in text
    assert "splits the whole sequence" in text and "ZeRO-3's per-GPU collective volume" in text
    assert "must not exceed the GPUs\nper node" in text and "takes from Megatron-LM" in text
    for mode in ("ZeRO-Infinity", "ZeRO++", "PipelineModule", "AutoTP", "Ulysses", "DeepSpeed-MoE", "3-D", "FastGen"):
        assert mode in text
