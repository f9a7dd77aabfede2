"""Section mla_serving-training-compute of "MLA as it is served".

Does MLA save compute in training? The per-token, per-layer projection weights and attention multiply-adds
of DeepSeek-V3's MLA against MHA and GQA layers of the same width and head count, recomputed from the
shape written out (DeepSeek-V3 sec. 4.2, config.json), not through mk.projection_params or
mk.attention_macs, and compared with what the chapter printed and glued.
"""
import chapter_outputs

# DeepSeek-V3: d 7168, 128 heads, query latent 1536, KV latent 512, rope 64, nope 128, value 128, 61 layers
D, H, DQ, DC, ROPE, NOPE, V = 7168, 128, 1536, 512, 64, 128, 128
N_TRAIN, S_DEC = 4096, 32768

MLA_Q = D * DQ + DQ * H * (NOPE + ROPE)
MLA_KV = D * DC + D * ROPE + DC * H * (NOPE + V)
MLA_PROJ = MLA_Q + MLA_KV + H * V * D


def dense_proj(h_kv, d_h):  # W_Q, W_K, W_V, W_O of a dense layer with h query heads of d_h
    return 2 * D * H * d_h + 2 * D * h_kv * d_h


LAYOUTS = {"mha": (H, 128), "gqa": (8, 128), "split": (H, D // H)}  # (KV heads, head size)
PAIR_MLA = NOPE + ROPE + V  # naive form: q.k over 192, p*v over 128


def core(pair):  # causal per-token score + mix multiply-adds at N_TRAIN
    return H * pair * (N_TRAIN + 1) / 2


def nb():
    return chapter_outputs.notebook("mla_serving")


def test_mla_projection_weights_printed():
    assert MLA_PROJ == 187_105_280
    out = chapter_outputs.printed(nb(), "mla_mats = {")
    assert f"{'sum':<44}{MLA_PROJ:>13,}  mk.projection_params: {MLA_PROJ:,}" in out
    for n_weights in (11_010_048, 37_748_736, 3_670_016, 458_752, 16_777_216, 117_440_512):
        assert f"{n_weights:,}" in out


def test_table_rows():
    out = chapter_outputs.printed(nb(), "N_TRAIN = 4096")
    rows = {"MLA, DeepSeek-V3": (MLA_PROJ, PAIR_MLA, DC + ROPE)}
    rows.update({name: (dense_proj(h_kv, d_h), 2 * d_h, 2 * h_kv * d_h) for name, (h_kv, d_h) in
                 {"MHA, 128 heads of 128": LAYOUTS["mha"], "GQA-8, 128 heads of 128": LAYOUTS["gqa"],
                  "MHA, 128 heads of 56": LAYOUTS["split"]}.items()})
    for name, (proj, pair, cached) in rows.items():
        c = int(core(pair))
        line = f"{name:<24}{proj:>13,}{pair:>16}{c:>15,}{6 * (proj + c) / 1e9:>14.2f}{cached:>8,}"
        assert line in out, line
    assert rows["MHA, 128 heads of 128"][0] == 469_762_048 and rows["GQA-8, 128 heads of 128"][0] == 249_561_088


def test_ratios_and_crossovers_glued():
    g = nb()
    for key, (h_kv, d_h) in LAYOUTS.items():
        proj, pair = dense_proj(h_kv, d_h), 2 * d_h
        assert chapter_outputs.glued(g, f"mla_tc_proj_{key}") == f"{MLA_PROJ / proj:.2f}"
        at4k = (MLA_PROJ + core(PAIR_MLA)) / (proj + core(pair))
        assert chapter_outputs.glued(g, f"mla_tc_4k_{key}") == f"{at4k:.2f}"
        n_equal = 2 * (proj - MLA_PROJ) / (H * (PAIR_MLA - pair)) - 1
        assert chapter_outputs.glued(g, f"mla_tc_equal_{key}") == f"{n_equal:,.0f}"
        assert chapter_outputs.glued(g, f"mla_tc_cache_{key}") == f"{2 * h_kv * d_h / (DC + ROPE):.1f}"
    # the claims in the prose: cheaper than both 128-wide layouts at 4K, dearer than the split MHA
    assert [chapter_outputs.glued(g, f"mla_tc_4k_{k}") for k in LAYOUTS] == ["0.50", "0.86", "1.15"]
    assert [chapter_outputs.glued(g, f"mla_tc_equal_{k}") for k in LAYOUTS] == ["69,007", "15,247", "1,382"]
    assert chapter_outputs.glued(g, "mla_tc_core") == "1.25"


def test_paths_glued():
    g = nb()
    want = {"q_mla": MLA_Q, "q_mha": D * H * 128, "kv_mla": MLA_KV, "kv_mha": 2 * D * H * 128,
            "kv_gqa": 2 * D * 8 * 128}
    for key, n_weights in want.items():
        assert chapter_outputs.glued(g, f"mla_tc_{key}") == f"{n_weights / 1e6:.1f}"
    assert MLA_KV > want["kv_gqa"]  # against GQA-8 the saving is all on the query path


def test_decode_absorbed():
    macs = DC * H * (NOPE + V) + H * S_DEC * (2 * DC + ROPE)  # fold W_UK, W_UV once; attend the latent
    mha_macs, mla_bytes, mha_bytes = 2 * H * S_DEC * 128, S_DEC * (DC + ROPE) * 2, S_DEC * 2 * H * 128 * 2
    out = chapter_outputs.printed(nb(), "S_DEC = 32768")
    assert f"{macs:,}" in out and f"{mla_bytes:,}" in out and f"{mha_bytes:,}" in out
    assert chapter_outputs.glued(nb(), "mla_tc_dec_macs") == f"{macs / mha_macs:.2f}" == "4.27"
    assert chapter_outputs.glued(nb(), "mla_tc_dec_bytes") == f"{mha_bytes / mla_bytes:.1f}" == "56.9"


def test_rounded_crossovers_and_path_differences_glued():
    g = nb()
    for key in ("mha", "gqa"):
        h_kv, d_h = LAYOUTS[key]
        n_equal = 2 * (dense_proj(h_kv, d_h) - MLA_PROJ) / (H * (PAIR_MLA - 2 * d_h)) - 1
        assert chapter_outputs.glued(g, f"mla_tc_equal_{key}_k") == f"{n_equal / 1000:.0f}"
    assert [chapter_outputs.glued(g, f"mla_tc_equal_{k}_k") for k in ("gqa", "mha")] == ["15", "69"]
    q_saving = D * H * 128 - MLA_Q  # the query factorisation against W_Q of 128 heads of 128
    kv_extra = MLA_KV - 2 * D * 8 * 128  # MLA's key-value path beyond GQA-8's W_K, W_V
    assert chapter_outputs.glued(g, "mla_tc_q_saving") == f"{q_saving / 1e6:.1f}" == "68.7"
    assert chapter_outputs.glued(g, "mla_tc_kv_extra_gqa") == f"{kv_extra / 1e6:.1f}" == "6.2"
    assert q_saving - kv_extra == dense_proj(8, 128) - MLA_PROJ  # the net is the whole projection gap


def test_decode_intensity_in_both_units():
    macs = DC * H * (NOPE + V) + H * S_DEC * (2 * DC + ROPE)
    per_byte = macs / (S_DEC * (DC + ROPE) * 2)
    g = nb()
    assert chapter_outputs.glued(g, "mla_tc_dec_mpb") == f"{per_byte:.0f}" == "121"
    assert chapter_outputs.glued(g, "mla_tc_dec_fpb") == f"{2 * per_byte:.0f}" == "243"
