"""Section speculative_decoding-draft-kinds of "Speculative decoding and the KV cache".

Recomputes the section's numbers without mha_kit: the cost ratio of a quantised copy of the target from the
bytes it reads (int4 with a 16-bit scale per 128 weights, FP8, against bf16), the acceptance that copy needs
for a 2x speed-up from Leviathan et al.'s walltime model (expected tokens 1 + alpha + ... + alpha^k over
k c + 1, Theorem 3.8), the 1/c ceiling, the extra gigabytes for Llama 3 70B (its config.json written out here),
and the coverage 1 - (1 - alpha)^m of m independent drafts merged into a tree; compares them with the stored
outputs and checks the section's citations, its table and its dropdown.
"""
import pathlib
import re

import pytest

import chapter_outputs
from speculative_reference import speedup, tokens

NB = chapter_outputs.notebook("speculative_decoding")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text()
LABEL = "speculative_decoding-draft-kinds"
INT4_BITS = 4 + 16 / 128  # a 16-bit scale shared by 128 int4 weights
C_SMALL, K_TREE = 0.05, 4


def glued(key):
    return chapter_outputs.glued(NB, key)


def best(alpha, c):
    return max(speedup(alpha, k, c) for k in range(1, 16))


def llama3_70b_params():
    # meta-llama/Meta-Llama-3-70B config.json: hidden 8192, 80 layers, 64 heads, 8 KV heads, FFN 28672, vocab 128256,
    # untied embedding and output head, two RMSNorm weights per layer and a final one
    d, layers, heads, kv, ffn, vocab = 8192, 80, 64, 8, 28672, 128256
    head_dim = d // heads
    attn = d * d * 2 + 2 * d * kv * head_dim
    return layers * (attn + 3 * d * ffn + 2 * d) + 2 * vocab * d + d


def section():
    return chapter_outputs.section(NB, LABEL, end="speculative_decoding-draft-placement", kinds=("markdown",))


def test_quantised_copy_cost_and_needed_acceptance():
    c4 = INT4_BITS / 16
    assert glued("sdk_c_int4") == f"{c4:.3f}" == "0.258"
    need = next(a / 100 for a in range(30, 100) if best(a / 100, c4) >= 2.0)
    assert glued("sdk_need_int4") == f"{need:.2f}" == "0.90"
    # an exact quarter (the chapter's table) needs 0.89; the scale bytes push the copy one step higher
    assert next(a / 100 for a in range(30, 100) if best(a / 100, 0.25) >= 2.0) == 0.89
    assert glued("sdk_up_int4_95") == f"{best(0.95, c4):.2f}"


def test_fp8_copy_never_reaches_two():
    assert glued("sdk_up_fp8_95") == f"{best(0.95, 0.5):.2f}"
    # E <= k + 1, so the speed-up is below (k + 1) / (k / 2 + 1) < 2 for every k and alpha < 1
    assert all(speedup(a / 1000, k, 0.5) < 2 for a in range(0, 1000, 7) for k in range(0, 64))
    assert all((k + 1) / (k * 0.5 + 1) < 2 for k in range(1, 1000))


def test_memory_of_the_copy():
    params = llama3_70b_params()
    assert 70.5e9 < params < 70.6e9
    assert glued("sdk_gb_int4") == f"{params * INT4_BITS / 8 / 1e9:.0f}" == "36"
    assert glued("sdk_gb_fp8") == f"{params / 1e9:.0f}" == "71"


def test_own_kv_cache_at_long_context():
    # Llama 3 70B: 80 layers, 8 KV heads of 128, K and V, 2 bytes each, for 32768 tokens of one sequence
    kv = 80 * 8 * 128 * 2 * 2 * 32768
    assert glued("sdk_kv_gb") == f"{kv / 1e9:.1f}" == "10.7"
    params = llama3_70b_params()
    c = (params * INT4_BITS / 8 + kv) / (2 * params + kv)
    assert glued("sdk_c_long") == f"{c:.2f}" == "0.31"
    need = next(a / 100 for a in range(30, 100) if best(a / 100, c) >= 2.0)
    assert glued("sdk_need_long") == f"{need:.2f}"
    assert need > float(glued("sdk_need_int4"))



def test_kv_cache_against_weights_and_the_128k_window():
    kv_tok = 80 * 8 * 128 * 2 * 2  # bytes per token, bf16
    params = llama3_70b_params()
    assert glued("sdk_gb_bf16") == f"{2 * params / 1e9:.0f}" == "141"
    cross = 2 * params / kv_tok
    assert glued("sdk_cross_k") == f"{cross / 1e3:.0f}" == "431"
    assert cross > 131072  # past the window: the cache never passes the weights for this model
    kv = kv_tok * 131072
    assert glued("sdk_kv_max_gb") == f"{kv / 1e9:.1f}" == "42.9"
    c = (params * INT4_BITS / 8 + kv) / (2 * params + kv)
    assert glued("sdk_c_max") == f"{c:.2f}" == "0.43"
    assert glued("sdk_up_max_99") == f"{best(0.99, c):.2f}"
    assert all(best(a / 100, c) < 2.0 for a in range(30, 100))  # no alpha <= 0.99 reaches 2x
    text = section()
    assert "towards 1 as the context grows" not in text
    assert "unless quantised, QuantSpec" not in text
    assert "0.01 to 0.1 |" not in text and "sd_draft_c8b" in text
    assert "high (EAGLE, MTP); falls with head depth (Medusa)" in text
    assert "usually optimistic" in text and "of the same size" not in text

def test_medusa_head_larger_than_a_layer():
    d, vocab, ffn, kv_dim = 8192, 128256, 28672, 8 * 128
    layer = 2 * d * d + 2 * d * kv_dim + 3 * d * ffn + 2 * d
    head = vocab * d + d * d + d  # own d x V output layer plus a d x d residual block (Medusa 2.1.1)
    assert glued("sdk_layer_b") == f"{layer / 1e9:.2f}" == "0.86"
    assert glued("sdk_medusa_b") == f"{head / 1e9:.2f}" == "1.12"
    assert glued("sdk_medusa5_layers") == f"{5 * head / layer:.1f}"
    assert head > layer


def test_no_upper_bound_claim_and_no_author_note():
    text = section()
    assert "upper bound" not in text and "were not read" not in text
    assert "above 90%" in text and "if independent" in text and "top-$k$" in text


@pytest.mark.parametrize("alpha", (0.6, 0.7))
@pytest.mark.parametrize("m", (1, 2, 3))
def test_merged_drafts(alpha, m):
    miss = 1.0
    for _ in range(m):
        miss *= 1 - alpha  # every one of the m independent drafts wrong at this position
    tag = f"{round(100 * alpha)}_{m}"
    assert glued(f"sdk_hit_{tag}") == f"{1 - miss:.3f}"
    assert glued(f"sdk_up_{tag}") == f"{speedup(1 - miss, K_TREE, m * C_SMALL):.2f}"


def test_exact_coverage_values_and_the_third_draft():
    assert [glued(f"sdk_hit_60_{m}") for m in (1, 2, 3)] == ["0.600", "0.840", "0.936"]
    assert [glued(f"sdk_hit_70_{m}") for m in (1, 2, 3)] == ["0.700", "0.910", "0.973"]
    assert speedup(0.973, 4, 0.15) < speedup(0.91, 4, 0.10)  # the prose: a third draft no longer pays at 0.7


def test_printed_table_matches():
    cell = next(c for c in NB["cells"] if "def best_speedup_k" in "".join(c["source"]))
    text = "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("name") == "stdout")
    rows = re.findall(r"alpha ([0-9.]+), m = (\d): ([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)x\s+\((\d+) tree tokens", text)
    assert len(rows) == 6
    for a, m, hit, tok, up, width in rows:
        a, m = float(a), int(m)
        p = 1 - (1 - a) ** m
        assert (hit, tok, up) == (f"{p:.3f}", f"{tokens(p, K_TREE):.2f}", f"{speedup(p, K_TREE, m * C_SMALL):.2f}")
        assert int(width) == m * K_TREE
    assert "the bound 1/c: 3.88x for the int4 copy, 2.00x for the FP8 copy" in text


def test_citations_table_and_dropdown():
    text = section()
    for key in ("leviathan2023fast", "zhao2025qspec", "tiwari2025quantspec", "miao2024specinfer", "vllmspecconfig",
                "sglangspec", "cai2024medusa"):
        assert key in text
        assert re.search(r"@\w+\{" + key + ",", BIB), key
    assert "1.64x" in BIB and "1.55x" in BIB and "2410.11305" in BIB and "2502.10424" in BIB
    assert re.search(r"@inproceedings\{tiwari2025quantspec,[^@]*International Conference on Machine Learning", BIB)
    for ref in ("speculative_decoding-self-speculative", "speculative_decoding-proposers",
                "speculative_decoding-draft-choice", "tree_attention-mask"):
        assert "{ref}`" + ref + "`" in text
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) == 7  # header and six kinds
    assert all(line.count(" | ") == 5 for line in table)
    assert "In the interview" in text
    assert text.count(":class: dropdown") == 1
    assert text.count("**Strong answer.**") == text.count("**Listening for.**") == text.count("**Trap.**") == 1
