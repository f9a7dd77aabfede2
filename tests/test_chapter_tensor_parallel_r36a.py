"""Section tensor_parallel-uneven-heads of "Tensor parallelism and the cache" (vLLM issue 5003).

Which tensor-parallel sizes a model admits in vLLM: query heads divide by t (ModelConfig.verify_with_parallel_config),
KV heads divide by t or t is a multiple of them (QKVParallelLinear replicates), the MLP widths divide by t, and for
4-bit checkpoints each rank's share is whole groups of 128 (AWQLinearMethod.create_weights). The shapes are typed here
from the models' config.json files, not read from mha_kit. Then Llama 3 70B on three A100-80GB (80 GB, 2,039 GB/s):
TP 2, PP 3 with vLLM's get_pp_indices split, TP 3 padded to 72/9 heads, TP 3 with uneven 3/3/2 KV groups.
"""
import re

import chapter_outputs

# name: (title, heads, KV heads or None for MLA, MLP widths: dense, then one expert's) -- config.json values
MODELS = {
    "transformer-base": ("Transformer (base)", 8, 8, (2048,)),
    "gpt2": ("GPT-2 small", 12, 12, (3072,)),
    "llama-3-8b": ("Llama 3 8B", 32, 8, (14336,)),
    "llama-3-70b": ("Llama 3 70B", 64, 8, (28672,)),
    "llama-3.1-405b": ("Llama 3.1 405B", 128, 8, (53248,)),
    "mistral-7b": ("Mistral 7B", 32, 8, (14336,)),
    "falcon-7b": ("Falcon-7B", 71, 1, (18176,)),
    "falcon-40b": ("Falcon-40B", 128, 8, (32768,)),
    "deepseek-67b": ("DeepSeek LLM 67B", 64, 8, (22016,)),
    "qwen2.5-7b": ("Qwen2.5-7B", 28, 4, (18944,)),
    "gemma-2-9b": ("Gemma 2 9B", 16, 8, (14336,)),
    "deepseek-v2": ("DeepSeek-V2", 128, None, (12288, 1536)),
    "deepseek-v2-lite": ("DeepSeek-V2-Lite", 16, None, (10944, 1408)),
    "deepseek-v3": ("DeepSeek-V3", 128, None, (18432, 2048)),
    "qwen3-30b-a3b": ("Qwen3-30B-A3B", 32, 4, (6144, 768)),
    "llama-3.2-1b": ("Llama 3.2 1B", 32, 8, (8192,)),
}
# d_model and the attention output's width (heads x head_dim, or x v_head_dim for MLA), from config.json
ATTN = {"transformer-base": (512, 512), "gpt2": (768, 768), "llama-3-8b": (4096, 4096), "llama-3-70b": (8192, 8192),
        "llama-3.1-405b": (16384, 16384), "mistral-7b": (4096, 4096), "falcon-7b": (4544, 4544),
        "falcon-40b": (8192, 8192), "deepseek-67b": (8192, 8192), "qwen2.5-7b": (3584, 3584),
        "gemma-2-9b": (3584, 4096), "deepseek-v2": (5120, 16384), "deepseek-v2-lite": (2048, 2048),
        "deepseek-v3": (7168, 16384), "qwen3-30b-a3b": (2048, 4096), "llama-3.2-1b": (2048, 2048)}
# Llama 3 70B config.json: hidden 8192, 80 layers, 64 heads of 128, 8 KV heads, intermediate 28672, vocab 128256
D, LAYERS, VOCAB, HEAD, FF = 8192, 80, 128256, 128, 28672
HBM, BW = 80e9, 2.039e12  # A100 80GB datasheet


def nb():
    return chapter_outputs.notebook("tensor_parallel")


def admits(heads, kv, widths, t, group=None, attn=None):
    if heads % t:
        return False
    if kv is not None and (kv % t if t < kv else t % kv):
        return False
    if any(w % t for w in widths):
        return False
    if group is None:
        return True
    d_model, attn_out = attn
    # column-parallel layers take the whole d_model; row-parallel ones (o_proj, down) take 1/t of their input
    return d_model % group == 0 and all(w % t == 0 and w // t % group == 0 for w in (*widths, attn_out))


def test_admitted_sizes_match_the_printed_table():
    out = chapter_outputs.printed(nb(), "def tp_checks")
    for name, (title, heads, kv, widths) in MODELS.items():
        bf16 = [t for t in range(1, 9) if admits(heads, kv, widths, t)]
        g128 = [t for t in range(1, 9) if admits(heads, kv, widths, t, 128, ATTN[name])]
        row = f"{' '.join(map(str, bf16)):<19}{' '.join(map(str, g128)) or '-':<13}"
        # the title column matched whole, so "DeepSeek-V2" cannot match the "DeepSeek-V2-Lite" line
        lines = [line for line in out.splitlines() if re.split(r"\s{2,}", line.strip())[0] == title]
        assert len(lines) == 1 and row in lines[0], (title, row, lines)
    # the hand-checked cases the text names
    assert [t for t in range(1, 9) if admits(64, 8, (28672,), t)] == [1, 2, 4, 8]
    assert [t for t in range(1, 9) if admits(12, 12, (3072,), t)] == [1, 2, 3, 4, 6]
    assert not admits(28, 4, (18944,), 7)  # 7 divides 28 heads but is not a multiple of 4 KV heads
    assert not admits(28, 4, (), 7) and not admits(28, 4, (), 14) and 18944 % 7  # nor 14; 7 fails the MLP too
    g = {n: [t for t in range(1, 9) if admits(*MODELS[n][1:], t, 128, ATTN[n])] for n in ("gpt2", "transformer-base")}
    assert g == {"gpt2": [1, 2, 3, 6], "transformer-base": [1, 2, 4]}  # o_proj: 768/4 = 192, 512/8 = 64
    assert not [t for t in range(1, 9) if admits(71, 1, (18176,), t, 128, (4544, 4544))] and 4544 / 128 == 35.5
    assert 22016 // 8 / 128 == 21.5 and 768 // 4 / 128 == 1.5 and 10944 % 128 == 64
    assert 28672 == 2**12 * 7
    at_3 = sum(admits(h, kv, w, 3) for _, h, kv, w in MODELS.values())
    assert at_3 == 1


def pp_split(layers, stages):
    """vLLM get_pp_indices: layers // stages each, the remainder one each to stages -2, -3, ..."""
    parts = [layers // stages] * stages
    for i in range(layers % stages):
        parts[stages - 2 - i] += 1
    return parts


def layer_params(q, kv, ff):
    return 2 * D * HEAD * q + 2 * D * HEAD * kv + 3 * D * ff + 2 * D


def test_three_gpu_options():
    assert pp_split(80, 3) == [27, 27, 26] and pp_split(81, 4) == [20, 20, 21, 20]
    kv_tok = 2 * 2 * HEAD  # K and V, bf16, one head, one layer
    emb = 2 * VOCAB * D
    # (a) TP 2: 32 heads, 4 KV heads, half the MLP and half of the embedding and LM head on each GPU
    w_a = LAYERS * 2 * layer_params(32, 4, FF // 2) + emb
    tok_a = (HBM - w_a) // (kv_tok * 4 * LAYERS)
    # (b) PP 3
    w_b = [n * 2 * layer_params(64, 8, FF) for n in (27, 27, 26)]
    w_b[0] += emb
    w_b[2] += emb + 2 * D
    tok_b = min((HBM - w) // (kv_tok * 8 * n) for w, n in zip(w_b, (27, 27, 26)))
    # (c) padded: 72 query heads and 9 KV heads over 3, MLP padded to 28,674
    w_c = LAYERS * 2 * layer_params(24, 3, 9558) + 2 * emb // 3
    tok_c = (HBM - w_c) // (kv_tok * 3 * LAYERS)
    assert 28674 == 3 * 9558 and 9558 + 2 * 9557 == FF
    rows = {"(a) TP 2, one GPU idle": (2, w_a, tok_a, w_a), "(b) PP 3, layers 27/27/26": (3, max(w_b), tok_b, sum(w_b)),
            "(c) TP 3, padded to 72/9 heads": (3, w_c, tok_c, w_c), "(d) TP 3, uneven 3/3/2 groups": (3, w_c, tok_c, w_c)}
    out = chapter_outputs.printed(nb(), "def pp_layers")
    for label, (gpus, w, tok, read) in rows.items():
        line = f"{label:<32}{gpus:>5}{f'{w / 1e9:.1f} GB':>18}{int(tok):>14,}{1e3 * read / BW:>14.1f} ms"
        assert line in out, line
    assert (int(tok_a), int(tok_b), int(tok_c)) == (57_647, 286_578, 260_035)
    assert tok_b > tok_c > tok_a and sum(w_b) / BW > w_a / BW > w_c / BW  # PP: most cache, slowest lone token
    assert 72 / 64 == 1.125 == 24 / (64 / 3)
    # (a) on the card's 80 GiB and at vLLM's default memory fractions
    gib = 80 * 2**30
    at = {f: int((f * gib - w_a) // (kv_tok * 4 * LAYERS)) for f in (1.0, 0.9, 0.92)}
    assert at[1.0] == 93_654 and at[0.9] == 41_225 and at[0.9] < tok_a < at[1.0]
    # (e) TP 2 with FP8 linear weights (1 byte), bf16 embedding and LM head halves and norms
    lin = LAYERS * (2 * D * HEAD * 32 + 2 * D * HEAD * 4 + 3 * D * FF // 2)
    w_e = w_a - lin
    tok_e = int((HBM - w_e) // (kv_tok * 4 * LAYERS))
    tok_e8 = int((HBM - w_e) // (kv_tok * 2 * LAYERS))
    out2 = chapter_outputs.printed(nb(), "GIB80")
    assert f"(a) on 80 GiB: {at[1.0]:,} tokens; at gpu_memory_utilization 0.9: {at[0.9]:,}, 0.92: {at[0.92]:,}" in out2
    assert (f"(e) TP 2, FP8 weights: {w_e / 1e9:.1f} GB a GPU, {tok_e:,} tokens ({tok_e / tok_a:.1f} x (a)), "
            f"{tok_e8:,} with an FP8 cache, {1e3 * w_e / BW:.1f} ms") in out2
    assert tok_e > 4 * tok_a and 1e3 * w_e / BW < 1e3 * w_c / BW


W_A = LAYERS * 2 * (2 * D * HEAD * 32 + 2 * D * HEAD * 4 + 3 * D * FF // 2 + 2 * D) + 2 * VOCAB * D  # (a), one GPU


def test_glued_numbers():
    want = {"tpdiv_llama70_tp": "1, 2, 4, 8", "tpdiv_qwen7_tp": "1, 2, 4", "tpdiv_gpt2_tp": "1, 2, 3, 4, 6",
            "tpdiv_ds67_g128": "1, 2, 4", "tpdiv_qwen3_g128": "1, 2", "tpdiv_n_at_3": "1", "tpdiv_n_models": "16",
            "tpdiv_tp2_tokens": "57,647", "tpdiv_pp_tokens": "286,578", "tpdiv_pad_tokens": "260,035",
            "tpdiv_uneven_tokens": "260,035", "tpdiv_pp_split": "27/27/26", "tpdiv_pad_pct": "12.5%",
            "tpdiv_tp2_ms": "34.6", "tpdiv_pp_ms": "69.2", "tpdiv_pad_ms": "23.6", "tpdiv_tp2_w": "70.6 GB",
            "tpdiv_gpt2_g128": "1, 2, 3, 6", "tpdiv_tbase_g128": "1, 2, 4", "tpdiv_qwen7_ff7": f"{18944 / 7:,.1f}",
            "tpdiv_falcon7_dgroups": "35.5", "tpdiv_gpt2_oproj4": "1.5", "tpdiv_tp2_gib_tokens": "93,654",
            "tpdiv_tp2_u90_tokens": "41,225", "tpdiv_fa_split": "22/21/21", "tpdiv_ff_pad": "28,674",
            "tpdiv_tp2_kvfp8_tokens": f"{int((HBM - W_A) // (2 * HEAD * 4 * LAYERS)):,}"}
    assert {k: chapter_outputs.glued(nb(), k) for k in want} == want


def test_section_cites_the_sources_and_links_replication():
    sec = chapter_outputs.section(nb(), "tensor_parallel-uneven-heads", end="tensor_parallel-dp-attention")
    for key in ("vllm5003{issue description", "vllm5003{comment by robertgshaw2-neuralmagic",
                "vllmverifyparallel{vllm/config/model.py, ModelConfig.verify_with_parallel_config}",
                "vllmqkv{linear.py, QKVParallelLinear.__init__", "vllmawqlinear{", "vllm11797{",
                "vllmparallelismscaling{", "vllmppindices{", "vllmverifyparallel2024{", "sglang6771{", "sglang8243{",
                "vllm13934{", "flashattndistributed{", "vllm4232{", "vllmmarlinshape{",
                "vllmgpumemutildefault{", "vllmfp8config{", "vllmengineargs{"):
        assert key in sec, key
    assert "{ref}`tensor_parallel-replication`" in sec and "{ref}`tensor_parallel-pipeline-bubble`" in sec
    assert "In the interview" in sec and sec.count(":class: dropdown") == 2
