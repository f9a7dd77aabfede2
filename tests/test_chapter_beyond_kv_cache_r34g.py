"""Section beyond_kv_cache-needs-training: DeepSeek-V3.2-Exp's continued pre-training token counts (report §2.1:
1,000 steps x 16 sequences and 15,000 steps x 480 sequences of 128K tokens), GQA-8 against MHA on Llama 3 70B
(64 query heads, 8 KV heads), MLA's latent (512 + 64) against DeepSeek-V3's 128 heads of 192 + 128, and which
methods the table marks as needing no training."""
import chapter_outputs

NB = chapter_outputs.notebook("beyond_kv_cache")
SEQ = 128 * 1024


def _rows():
    text = chapter_outputs.printed(NB, "warmup_tokens =")
    return {line[:27].strip(): line[27:].split() for line in text.splitlines()[1:]}


def test_dsa_token_counts():
    warm, sparse = 1_000 * 16 * SEQ, 15_000 * 480 * SEQ
    assert f"{warm / 1e9:.1f}B" == "2.1B" and f"{sparse / 1e9:.1f}B" == "943.7B"  # the report's own figures
    assert chapter_outputs.glued(NB, "bk_nt_warm") == "2.1B"
    assert chapter_outputs.glued(NB, "bk_nt_sparse") == "943.7B"
    assert chapter_outputs.glued(NB, "bk_nt_share") == f"{100 * warm / (warm + sparse):.1f}%"
    assert _rows()["DSA"][:4] == ["continued", "2.1B", "+", "943.7B"]


def test_cache_factors():
    rows = _rows()
    assert rows["GQA-8 / MQA"][-5] == f"{8 / 64:.3g}" and rows["GQA-8 / MQA"][-1] == f"{1 / 64:.3g})"
    assert rows["MLA"][-5] == f"{(512 + 64) / (128 * (192 + 128)):.3g}" and "DeepSeek-V3's" in rows["MLA"]
    assert rows["DSA"][5] == f"{(2 * 576 + 128 + 4) / (2 * 576):.3g}"
    assert rows["CLA2 / YOCO"][-6] == "0.5"
    assert " ".join(rows["evict (H2O, SnapKV)"][-2:]) == "(budget 4,096)"
    assert " ".join(rows["DSA"][6:]).startswith("of a BF16 MLA cache")


def test_cross_model_and_lossy_factors():
    """MLA against Llama 3 70B's GQA-8 entries (8 heads x 128 for K and V, 80 layers; DeepSeek-V3 61 layers),
    and the lossy engineering cuts matching the trained factors (FP8 2x, eviction to 4,096 of 32K 8x)."""
    per_layer = 576 / (2 * 8 * 128)
    whole = 61 * 576 * 2 / (80 * 2 * 8 * 128 * 2)
    assert chapter_outputs.glued(NB, "bk_nt_mla70_layer") == f"{per_layer:.2f}" == "0.28"
    assert chapter_outputs.glued(NB, "bk_nt_mla70_model") == f"{whole:.2f}" == "0.21"
    assert chapter_outputs.glued(NB, "bk_nt_layers") == "61 layers against 80"
    assert chapter_outputs.glued(NB, "bk_nt_gqa") == f"{64 // 8}×"
    assert chapter_outputs.glued(NB, "bk_nt_fp8") == "2×"
    assert chapter_outputs.glued(NB, "bk_nt_evict") == f"{32768 / 4096:.0f}×"
    assert chapter_outputs.glued(NB, "bk_nt_budget") == "4,096"
    assert chapter_outputs.glued(NB, "bk_nt_dsa") == f"{(2 * 576 + 128 + 4) / (2 * 576):.3g}"
    hybrid = float(chapter_outputs.glued(NB, "bk_nt_hybrid").rstrip("×"))
    assert 3.0 < hybrid < 4.0  # 1 attention layer in 4 plus the state layers' fixed cost at 32K
    # recomputed: Llama 3 70B at 32K, 20 of 80 layers keep bf16 K and V (8 heads of 128); the other 60 are linear
    # attention, 64 query heads each holding an fp32 state S (128 x 128) and normaliser z (128)
    per_layer_token, s32 = 2 * 8 * 128 * 2, 32768
    full = 80 * per_layer_token * s32
    hybrid_bytes = 20 * per_layer_token * s32 + 60 * 64 * (128 * 128 + 128) * 4
    assert chapter_outputs.glued(NB, "bk_nt_hybrid") == f"{full / hybrid_bytes:.1f}×" == "3.7×"
    assert _rows()["hybrid, attention 1 in 4"][-5] == f"{hybrid_bytes / full:.3g}"
    text = chapter_outputs.section(NB, "beyond_kv_cache-needs-training", end="beyond_kv_cache-minikv")
    assert "not shrink a sequence's own cache" in " ".join(text.split())
    assert "against the baseline named" in chapter_outputs.printed(NB, "warmup_tokens =")


def test_training_column():
    rows = _rows()
    no_training = {"sinks + window", "paging", "prefix sharing", "offload", "quantize fp8 / KIVI 2-bit",
                   "evict (H2O, SnapKV)"}
    assert {name for name, cols in rows.items() if cols[0] == "no"} == no_training
    assert rows["sliding window (Gemma 3)"][:4] == ["yes,", "to", "be", "exact"]
    for name in ("paging", "prefix sharing"):
        assert rows[name][1] == "exact"
    text = chapter_outputs.section(NB, "beyond_kv_cache-needs-training", end="beyond_kv_cache-minikv")
    assert "deepseekv32{§2.1}" in text and "ainslie2023gqa{Abstract, §2.1}" in text
    assert "is wrong" in text
    assert "yuan2025nsa{§2.2, §4}" in text and "llama3{§3.2}" in text and "Mistral 7B v0.1" in text
