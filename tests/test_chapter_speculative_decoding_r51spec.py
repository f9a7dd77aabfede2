"""Section speculative_decoding-recurrent-rollback: rolling back a hybrid model's recurrent state after rejected drafts.

Recomputes the state bytes of Qwen3-Next 80B-A3B from its config.json figures (36 Gated DeltaNet layers of 32 value
heads and 16 key heads of 128, conv kernel 4; 12 attention layers with 2 KV heads of 256; bf16), without the kit's
HybridModel, then the snapshot/restore and windowed (W = k + 1) costs for k = 4, and checks the printed table, the
glued values, the citations with their locators and the boxes.
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("speculative_decoding")
LABEL = "speculative_decoding-recurrent-rollback"
K, ALPHA, BATCH = 4, 0.8, 64
GDN_LAYERS, HV, HK, DK, DV, CONV = 36, 32, 16, 128, 128, 4
ATTN_LAYERS, KV_HEADS, HEAD_DIM = 12, 2, 256
STATE = GDN_LAYERS * (HV * DK * DV + (2 * HK * DK + HV * DV) * (CONV - 1)) * 2  # bytes, bf16
KV_TOKEN = ATTN_LAYERS * 2 * KV_HEADS * HEAD_DIM * 2
RECURRENT = GDN_LAYERS * HV * DK * DV * 2  # bytes of the recurrent matrices alone, bf16


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def gib(n):
    return f"{n / 2**30:.1f} GiB"


def test_state_bytes():
    assert STATE == 39_518_208 and KV_TOKEN == 24_576
    assert STATE // KV_TOKEN == 1608


def test_printed_and_glued():
    text = chapter_outputs.printed(NB, 'hyb = mk.HYBRID_MODELS["qwen3-next-80b-a3b"]')
    p_reject = 1 - ALPHA**K
    assert f"{mib(STATE)} of state per sequence = KV of {STATE // KV_TOKEN:,} tokens (24 KiB per token in 12 layers)" in text
    assert f"P(some draft rejected) = {p_reject:.2f}" in text
    rows = {line.split("  ")[0]: line for line in text.splitlines()}
    snap = rows["snapshot / restore"]
    assert mib(2 * STATE) in snap and mib((1 + p_reject) * STATE) in snap and "72 + 72" in snap
    win = rows["window W = k + 1"]
    assert mib((K + 1) * STATE) in win and mib(p_reject * STATE) in win
    assert (f"state writes per verify: snapshot {mib(STATE)} (one state) + restore {mib(p_reject * STATE)} mean + a "
            f"replay pass; window {mib((K + 1) * STATE)} (k + 1 states, {mib(K * STATE)} more than decode)") in text
    fp32 = STATE + RECURRENT  # recurrent matrices in fp32, conv window in bf16
    assert f"recurrent share {RECURRENT / STATE:.1%}; fp32 recurrent + bf16 conv: {mib(fp32)} per sequence (x{fp32 / STATE:.2f})" in text
    assert mib(K * STATE) == "150.8 MiB" and mib(fp32) == "73.7 MiB"
    extra = BATCH * K * STATE
    assert f"window at batch {BATCH}: {gib(extra)} more than one state each = KV of {extra // KV_TOKEN:,} tokens" in text
    g = chapter_outputs.cell_glue(NB, 'hyb = mk.HYBRID_MODELS["qwen3-next-80b-a3b"]')
    assert g == {"sd_rb_state": mib(STATE), "sd_rb_kv_tokens": f"{STATE // KV_TOKEN:,}",
                 "sd_rb_copies": str(2 * GDN_LAYERS), "sd_rb_window": mib((K + 1) * STATE),
                 "sd_rb_preject": f"{p_reject:.2f}", "sd_rb_batch_extra": gib(extra),
                 "sd_rb_layers": str(GDN_LAYERS), "sd_rb_window_writes": mib(K * STATE),
                 "sd_rb_restore": mib(p_reject * STATE), "sd_rb_rec_share": f"{RECURRENT / STATE:.1%}",
                 "sd_rb_state_fp32": mib(fp32), "sd_rb_fp32_ratio": f"{fp32 / STATE:.2f}"}


def test_prose_citations_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-draft-cache-sync", kinds=("markdown",))
    assert text.startswith(f"({LABEL})=\n### ")
    chapter_outputs.assert_cited(text, ["ortgenairecurrent", "sglangmambapool", "vllmgdnattn"])
    assert "recurrent_state.h l. 28-33" in text
    flat0 = " ".join(text.split())
    assert "which is why it is an export option" not in flat0  # ORT's doc gives no reason for the export option
    for phrase in ("`intermediate_ssm_state_cache`", "`spec_state_indices_tensor`", "`num_accepted_tokens`", "Qwen3.6"):
        assert phrase in flat0, phrase
    assert "recurrent_state.h l. 19-37" in text and "docs/speculative_decoding.md l. 289-309" in text
    chapter_outputs.assert_links(text, ["state_space_models-hybrids", "speculative_decoding-cache",
                                        "speculative_decoding-draft-cutoff", "speculative_decoding-output-drift"])
    flat = " ".join(text.split())
    for phrase in ("`Snapshot`", "`CropToPosition`", "`state_window = W`", "`2 * num_layers`", "bf16",
                   "commit a0c04eb", "$W = k + 1$"):
        assert phrase in flat, phrase
    assert "In the interview" in text and text.count(":class: dropdown") == 1
    assert text.count("**Strong answer.**") == 1 and text.count("**Trap.**") == 1
    bib = chapter_outputs.bibliography()
    assert re.search(r"@misc\{ortgenairecurrent,[^@]*a0c04eb1313b886c963e415bbd974748cb89a4eb", bib)
    assert re.search(r"@misc\{sglangmambapool,[^@]*1614769cf56b3e8bef51c39f1273fc8dfa6020f7[^@]*intermediate", bib)
    assert re.search(r"@misc\{vllmgdnattn,[^@]*007d50058a06dec0f82472d63c819244d460c40d[^@]*spec", bib)
