"""Section long_context_structure-million-token-design of "Sparse patterns and long-context evaluation".

The 1M-token bill of four layouts of one 8B model, recomputed from Llama 3 8B's shape written out (not
through mk.kv_cache_bytes, mk.layout_kv_bytes or mk.hybrid_cache_bytes), Gemma 3's 5:1 rule with a
1,024 window, MiniMax-01's one softmax layer in eight, a linear layer's h (d_h^2 + d_h) fp32 state, and
DSA's indexer (64 heads of 128, top 2,048, fp8 keys with one fp32 scale) scaled to the model.
"""
import pytest

import chapter_outputs

NB = chapter_outputs.notebook("long_context_structure")
LABEL = "long_context_structure-million-token-design"

# Llama 3 8B config.json: 32 layers, d 4096, 32 query heads, 8 KV heads of 128, FFN 14336, vocab 128256
L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
S = 2**20
GIB = 2**30
# parameters: untied embedding and head, per layer q, k, v, o, gate/up/down and two norms, the final norm
P = 2 * V * D + L * (D * H * HD + 2 * D * KV * HD + H * HD * D + 3 * D * FF + 2 * D) + D
PER_KEY = 2 * H * HD  # multiply-adds per (query, key) pair, one layer: scores and values
KV_LAYER_TOKEN = 2 * KV * HD * 2  # bf16 K and V
N_GLOBAL = L // 6  # Gemma 3: five local, then one global
N_SOFT = L // 8  # MiniMax-01: seven lightning, then one softmax
STATE = H * (HD * HD + HD) * 4  # one linear layer's state, fp32
LIN_FLOPS = H * 4 * HD * HD  # one token through one linear layer: write phi(k) v^T, read with phi(q)
DS_PER_KEY = 128 * (512 + 64 + 512)  # DeepSeek-V3 MLA, absorbed: scores over 576, values over 512
IDX_HEADS = round(64 * PER_KEY / DS_PER_KEY)
IDX_KEY = 128 + 4  # fp8 indexer key and an fp32 scale, per token and layer


def rows():
    full_kv = L * KV_LAYER_TOKEN * S
    gemma = KV_LAYER_TOKEN * (N_GLOBAL * S + (L - N_GLOBAL) * 1024)
    hybrid = N_SOFT * KV_LAYER_TOKEN * S + (L - N_SOFT) * STATE
    indexer = S * IDX_HEADS * (128 + 1)
    return {
        "full attention (GQA)": (2 * L * PER_KEY * S, full_kv, full_kv),
        "local:global 5:1, w 1,024": (2 * PER_KEY * (N_GLOBAL * S + (L - N_GLOBAL) * 1024), gemma, gemma),
        "linear:softmax 7:1": (2 * N_SOFT * PER_KEY * S + (L - N_SOFT) * LIN_FLOPS, hybrid, hybrid),
        f"top-2,048 sparse, {IDX_HEADS}-head index": (2 * L * (indexer + PER_KEY * 2048), full_kv + L * S * IDX_KEY,
                                                     L * (S * IDX_KEY + 2048 * KV_LAYER_TOKEN)),
    }


def fmt(b):  # bytes in the largest binary unit at least 1, one decimal unless whole (as the chapter prints)
    unit, size = ("GiB", GIB) if b >= GIB else ("MiB", 2**20)
    v = b / size
    return f"{v:,.0f} {unit}" if v == int(v) else f"{v:,.1f} {unit}"


def test_table():
    out = chapter_outputs.printed(NB, 'mk.LAYER_LAYOUTS["gemma-3"]')
    for name, (flops, held, read) in rows().items():
        line = f"{name:<37}{flops / 1e9:>17,.1f}{flops / (2 * P):>10.2f}{fmt(held):>13}{fmt(read):>12}"
        assert line in out, line
    prefill = L * 2 * PER_KEY * S * (S + 1) // 2
    assert f"{prefill:.2e} attention FLOPs, {prefill / (2 * P * S):.0f}x" in out
    assert f"{64 * 129:,} MACs a key against {PER_KEY:,}" in out


def test_glued():
    r = rows()
    full, gemma, hybrid = r["full attention (GQA)"], r["local:global 5:1, w 1,024"], r["linear:softmax 7:1"]
    sparse = r["top-2,048 sparse, 4-head index"]
    expect = {"lcs_mt_full_kv": "128 GiB", "lcs_mt_full_x": f"{full[0] / (2 * P):.0f}",
              "lcs_mt_gemma_kv": fmt(gemma[1]), "lcs_mt_hybrid_kv": fmt(hybrid[1]),
              "lcs_mt_hybrid_x": f"{hybrid[0] / (2 * P):.1f}", "lcs_mt_sparse_held": fmt(sparse[1]),
              "lcs_mt_sparse_read": fmt(sparse[2]), "lcs_mt_idx_heads": "4", "lcs_mt_global": "5",
              "lcs_mt_soft": "4", "lcs_mt_prefill_x": "17", "lcs_mt_full_gflop": "550"}
    for key, value in expect.items():
        assert chapter_outputs.glued(NB, key) == value, key
    assert expect["lcs_mt_full_x"] == "34" and expect["lcs_mt_hybrid_kv"] == "16.1 GiB"


def test_claims_in_prose():
    text = chapter_outputs.section(NB, LABEL, end="long_context_structure-axial")
    r = rows()
    assert r["full attention (GQA)"][1] > 80e9  # "more than an 80 GB H100 holds"
    assert r["top-2,048 sparse, 4-head index"][1] > r["full attention (GQA)"][1]  # sparse holds more than full
    # the windows and linear states are "rounding": under 1% of their layouts' bytes
    assert (L - N_GLOBAL) * 1024 * KV_LAYER_TOKEN < 0.01 * r["local:global 5:1, w 1,024"][1]
    assert (L - N_SOFT) * STATE < 0.01 * r["linear:softmax 7:1"][1]
    for phrase in ("(long_context_structure-million-token-design)=", "{ref}`context_parallelism-ring`",
                   "{ref}`long_context_structure-evaluation`", "minimax01{§2.2}", "gemma3report{§2}",
                   "In the interview", ":class: dropdown"):
        assert phrase in text, phrase
    for phrase in ("10,000,000", "qwen25_1mblog{Long-Context Training}", "*on one GPU*", "Of these",
                   "arora2024based{Abstract}", "deepseekv2{Abstract}"):
        assert phrase in text, phrase
    assert "qwen25_1mconfig" not in text  # that entry records dual_chunk_attention_config, not rope_theta


@pytest.mark.parametrize("label", ["long_context_structure-million-token-design"])
def test_order(label):
    labels = [c["source"][0].strip() for c in NB["cells"] if c["cell_type"] == "markdown" and c["source"]]
    labels = [s for s in labels if s.startswith("(") and s.endswith(")=")]
    at = labels.index(f"({label})=")
    assert labels.index("(long_context_structure-efficient-family)=") < at
    assert at < labels.index("(long_context_structure-chain)=")


def test_indexer_and_qwen():
    """The indexer's share of MLA, its decode bytes against GQA's, its prefill share; Qwen2.5-7B's KV at 1M."""
    out = chapter_outputs.printed(NB, "ds_share = 64")
    share = 64 * 129 / DS_PER_KEY
    read_x = KV_LAYER_TOKEN / IDX_KEY  # one shared indexer key whatever the head count
    prefill_x = PER_KEY / (IDX_HEADS * 129)
    qwen_kv = 2 * 28 * 4 * 128 * 2 * S  # Qwen2.5-7B config.json: 28 layers, 4 KV heads of 128, bf16
    assert (f"{share:.0%}", f"{read_x:.0f}", f"{prefill_x:.0f}", fmt(qwen_kv)) == ("6%", "31", "16", "56 GiB")
    assert (f"DSA's indexer is {share:.0%} of MLA's {DS_PER_KEY:,} MACs a key; it reads one shared {IDX_KEY}-byte "
            f"key a token whatever its heads, {read_x:.0f}x less than the {KV_LAYER_TOKEN:,} bytes of KV; in prefill "
            f"it costs 1/{prefill_x:.0f} of attention a pair; Qwen2.5-7B KV at 1M: {fmt(qwen_kv)}") in out
    expect = {"lcs_mt_ds_idx_share": f"{share:.0%}", "lcs_mt_idx_read_x": f"{read_x:.0f}",
              "lcs_mt_idx_key": str(IDX_KEY), "lcs_mt_idx_prefill_x": f"{prefill_x:.0f}",
              "lcs_mt_qwen_kv": fmt(qwen_kv), "lcs_mt_idx_macs": f"{64 * 129:,}"}
    for key, value in expect.items():
        assert chapter_outputs.glued(NB, key) == value, key
    assert read_x > 1 and prefill_x > 1  # decode reads and prefill pairs both cheaper than attention's
