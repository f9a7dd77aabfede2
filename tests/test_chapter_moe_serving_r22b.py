"""Section moe_serving-megablocks of "Mixture-of-experts serving": capacity padding against 128-row blocks.

The routing is regenerated with mha_kit.route_tokens and the same seed (it is the input, not the result);
everything else is recomputed here without mha_kit: Switch Transformer's capacity int(factor * n * k / E) with
every slot computed, the assignments over it dropped, Tutel's dynamic capacity (the busiest expert), and
MegaBlocks' padding of each expert's tokens to the next multiple of 128 (Gale et al. 2023, sec. 5.2), with
DeepSeek-V2-Lite's shape from its config.json, and the same padding with vLLM's untuned default blocks
(get_default_config: 16 rows if M <= E, else 64). The tuned H100 block sizes are copied from vLLM's
configs/E=128,N=384,device_name=NVIDIA_H100_80GB_HBM3.json. They are compared with the chapter's stored outputs.
"""
import json
import pathlib

import numpy as np

import mha_kit as mk
import chapter_outputs

ROOT = pathlib.Path(__file__).resolve().parents[1]
NB = json.loads((ROOT / "book" / "moe_serving.ipynb").read_text())
BIB = (ROOT / "references.bib").read_text()

# DeepSeek-V2-Lite config.json: n_routed_experts 64, num_experts_per_tok 6, hidden_size 2048, moe_intermediate_size 1408
E, K, D, DFF = 64, 6, 2048, 1408
TOKENS, BLOCK, SEED = 4096, 128, 2211
# configs/E=128,N=384,device_name=NVIDIA_H100_80GB_HBM3.json: BLOCK_SIZE_M for some of its token counts M
TUNED_H100_BLOCK_M = {1: 16, 16: 16, 128: 16, 256: 32, 512: 64, 1024: 64, 1536: 128, 2048: 128, 4096: 128}
ROW_GFLOP = 2 * 3 * D * DFF / 1e9  # gate, up and down projections, 2 FLOPs a multiply-add


def glued(key):
    return chapter_outputs.glued(NB, key)


def printed(marker):
    """The stdout of the code cell whose source contains ``marker``, as lines."""
    return chapter_outputs.printed(NB, marker).splitlines()


def schemes(counts):
    """(name, rows computed, assignments dropped) for one layer's per-expert counts."""
    useful = sum(counts)
    rows = []
    for factor in (1.0, 1.25, 2.0):
        cap = int(factor * useful / E)
        rows.append((f"capacity factor {factor}", E * cap, sum(max(c - cap, 0) for c in counts)))
    rows.append(("capacity = busiest", E * max(counts), 0))
    for blk in (BLOCK, 64, 16):
        rows.append((f"dropless, {blk}-row blocks", sum(-(-c // blk) * blk for c in counts), 0))
    return rows


def expected_lines():
    rng = np.random.default_rng(SEED)
    skew = [1.0 / r ** 0.6 for r in range(1, E + 1)]
    lines, table = [], {}
    for label, pop in (("uniform", None), ("skewed", np.array(skew))):
        choices = mk.route_tokens(TOKENS, E, K, rng, popularity=pop)
        counts = [0] * E
        for expert in choices.ravel().tolist():
            counts[expert] += 1
        useful = TOKENS * K
        for name, rows, dropped in schemes(counts):
            lines.append(f"{label:<8}{name:<24}{rows:>14,}{rows / useful:>9.2f}{dropped / useful:>9.1%}"
                         f"{rows * ROW_GFLOP:>13,.0f}")
            table[label, name] = rows / useful, dropped / useful
        lines.append(f"{label:<8}{'tokens per expert':<24}min {min(counts)}, mean {useful // E}, max {max(counts)}")
    return lines, table


def test_table_matches_recomputation():
    lines, _ = expected_lines()
    out = printed("E64, K6, TOKENS, BLOCK")
    assert out[1:1 + len(lines)] == lines
    assert out[-2] == ("block padding adds at most 64 x 127 = 8,128 rows: "
                       "33% of the 24,576 useful ones, whatever the routing")
    assert out[-1] == ("tuned H100 config (E=128, N=384), BLOCK_SIZE_M by batch M: "
                       + ", ".join(f"{m}: {b}" for m, b in TUNED_H100_BLOCK_M.items()))
    assert TUNED_H100_BLOCK_M[TOKENS] == BLOCK  # at this table's batch the tuned vLLM tile is MegaBlocks' 128


def test_glued_numbers():
    _, t = expected_lines()
    for label in ("uniform", "skewed"):
        assert glued(f"mb_drop1_{label}") == f"{t[label, 'capacity factor 1.0'][1]:.1%}"
        assert glued(f"mb_busiest_{label}") == f"{t[label, 'capacity = busiest'][0]:.2f}"
        for blk, key in ((BLOCK, "dropless"), (64, "dropless64"), (16, "dropless16")):
            assert glued(f"mb_{key}_{label}") == f"{t[label, f'dropless, {blk}-row blocks'][0]:.2f}"
    assert glued("mb_drop125_skewed") == f"{t['skewed', 'capacity factor 1.25'][1]:.1%}"
    assert glued("mb_drop2_skewed") == f"{t['skewed', 'capacity factor 2.0'][1]:.1%}"
    assert glued("mb_pad_bound") == "33%"  # 64 * 127 / 24576


def test_claims_the_prose_makes():
    _, t = expected_lines()
    # block padding never drops and stays within one partial block per expert, whatever the skew
    for label in ("uniform", "skewed"):
        assert 1.0 <= t[label, "dropless, 128-row blocks"][0] <= 1 + E * (BLOCK - 1) / (TOKENS * K)
    # the skewed router: capacity still drops at 1.25 and 2.0; growing it to the busiest costs more than blocks
    assert t["skewed", "capacity factor 1.25"][1] > 0 and t["skewed", "capacity factor 2.0"][1] > 0
    assert t["skewed", "capacity = busiest"][0] > 2 * t["skewed", "dropless, 128-row blocks"][0]
    # smaller blocks waste less, and at a capacity factor of 1 every dropless scheme computes more rows
    for label in ("uniform", "skewed"):
        r = [t[label, f"dropless, {blk}-row blocks"][0] for blk in (BLOCK, 64, 16)]
        assert r[0] > r[1] > r[2] > t[label, "capacity factor 1.0"][0] == 1.0
    # uniform routing at a factor of 1.25 drops nothing in this draw (the follow-up says so)
    assert t["uniform", "capacity factor 1.25"][1] == 0.0


def test_section_cites_the_paper_and_the_repo():
    text = "".join("".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown")
    start = text.index("(moe_serving-megablocks)=")
    section = " ".join(text[start:text.index("(moe_serving-attention-moe)=")].split())  # one space between words
    for locator in ("§5.1.3", "§5.1.4", "§5.2", "§6.1, Figure 7", "§6.2, Figure 8", "§6.3, Figure 9"):
        assert f"gale2023megablocks{{{locator}" in section, locator
    for speedup in ("1.38×, 2.0× and 4.35×", "1.38×, 1.37× and 1.18×", "1.8× to 2.4×", "98.6%"):
        assert speedup in section, speedup
    assert "@misc{megablocksrepo," in BIB and "@inproceedings{gale2023megablocks," in BIB
    for key in ("vllmpr2011", "vllmpr2542", "vllmmoeconfigs", "vllmfusedmoe"):
        assert f"@misc{{{key}," in BIB and f"{{cite}}`{key}`" in section, key
    # the fixes of review 22b: topology and transpose are separate kernels in the library; the padding gap
    # explains the win over Tutel's dropless MoE, not the one over token-dropping MoEs; SwiGLU is 2 SDDs + 1 DSD
    for phrase in ("sparse_transpose", "by one CUDA kernel", "time to the same validation loss",
                   "2, 4 and 8 times smaller micro-batches", "two SDDs", "Stanford STK's Triton kernels",
                   "get_default_config", "pads nothing", "with a smaller block"):
        assert (phrase in section) == (phrase not in ("by one CUDA kernel", "with a smaller block")), phrase
