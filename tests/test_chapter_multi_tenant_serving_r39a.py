"""Section multi_tenant_serving-kvcached of "Many models, adapters and tenants".

Two models on one 80 GB H100 (Llama 3 8B and Mistral 7B, bf16): the 4K-token sequences each holds in a
fixed 0.45 share against an elastic, kvcached-style shared pool at its peak, recomputed from the
models' shapes written out (config.json and the Mistral 7B paper), the H100's 80 GB and kvcached's
constants (compound pages of 2 MiB for every layer's K and V, the default contiguous layout on NVIDIA;
ten reserved pages; KVCACHED_GPU_UTILIZATION 0.95), not through mha_kit,
and compared with the values the chapter glues and prints. The prose: what it links and names.
"""
import math

import pytest

import chapter_outputs

LABEL = "multi_tenant_serving-kvcached"
HBM, BUDGET = 80e9, 0.9  # H100 SXM memory (decimal GB); two gpu_memory_utilization=0.45 shares
CONTEXT, PEAK, TROUGH, RESERVED = 4096, 60, 4, 10  # the section's loads; kvcached MAX_RESERVED_PAGES default
PAGE = 2 * 2**20  # kvcached's default physical page (csrc/allocator.cpp kPageSize)
KVCACHED_UTIL = 0.95  # kvcached/utils.py GPU_UTILIZATION default: map pages until 5% of the card is free

# (vocabulary, d, layers, query heads, KV heads, head size, MLP width); untied output head, RMSNorm weights
SHAPES = {"llama": (128_256, 4096, 32, 32, 8, 128, 14_336), "mistral": (32_000, 4096, 32, 32, 8, 128, 14_336)}


def params(v, d, layers, h, kv, hd, ff):
    return v * d * 2 + layers * (d * h * hd * 2 + 2 * d * kv * hd + 3 * d * ff + 2 * d) + d


def seq_bytes(shape):  # K and V, every layer, bf16, one 4K sequence
    _, _, layers, _, kv, hd, _ = shape
    return 2 * layers * kv * hd * 2 * CONTEXT


def page_set(shape):  # one page id: a compound page, 2 MiB for each layer's K and each layer's V
    return PAGE * shape[2] * 2


W = {m: 2 * params(*s) for m, s in SHAPES.items()}
POOL = BUDGET * HBM - sum(W.values())


def elastic(m, other):
    held = (math.ceil(TROUGH * seq_bytes(SHAPES[other]) / page_set(SHAPES[other])) + RESERVED) * page_set(SHAPES[other])
    pages = int((POOL - held) // page_set(SHAPES[m]))
    return pages * page_set(SHAPES[m]) // seq_bytes(SHAPES[m])


def fixed(m):
    return int((BUDGET * HBM / 2 - W[m]) // seq_bytes(SHAPES[m]))


def nb():
    return chapter_outputs.notebook("multi_tenant_serving")


def glued(key):
    return chapter_outputs.glued(nb(), key)


def test_parameter_counts_match_the_published_sizes():
    assert params(*SHAPES["llama"]) == 8_030_261_248
    assert params(*SHAPES["mistral"]) == 7_241_732_096


def test_a_page_id_is_128_mib_and_1024_tokens():
    per_token = seq_bytes(SHAPES["llama"]) // CONTEXT
    assert per_token == 131_072
    assert page_set(SHAPES["llama"]) == 128 * 2**20
    assert page_set(SHAPES["llama"]) // per_token == 1024
    assert glued("mt_kvc_page_mib") == "128"


@pytest.mark.parametrize("m, other, n_fixed, n_elastic", [
    ("llama", "mistral", 37, 70),   # 36 GB share - 16.06 GB of weights = 19.9 GB, 0.537 GB a sequence
    ("mistral", "llama", 40, 70),   # 36 - 14.48 = 21.5 GB
])
def test_fixed_share_against_elastic_at_the_peak(m, other, n_fixed, n_elastic):
    assert fixed(m) == n_fixed
    assert elastic(m, other) == n_elastic
    assert glued(f"mt_kvc_fixed_{m}") == str(n_fixed)
    assert glued(f"mt_kvc_elastic_{m}") == str(n_elastic)
    assert glued(f"mt_kvc_wait_{m}") == str(PEAK - n_fixed)
    assert n_fixed < PEAK <= n_elastic  # the fixed share leaves part of the peak waiting; elastic holds it all


def test_both_at_peak_the_totals_are_equal():
    both = int(POOL // seq_bytes(SHAPES["llama"]))
    assert both == fixed("llama") + fixed("mistral") == 77
    assert glued("mt_kvc_both") == "77"


def test_reserve_and_default_pool():
    reserve = RESERVED * page_set(SHAPES["llama"])
    assert f"{reserve / 1e9:.2f}" == "1.34"  # ten 128 MiB compound pages, not 20 MiB
    assert glued("mt_kvc_reserve_gb") == f"{reserve / 1e9:.2f}"
    default_kv = KVCACHED_UTIL * HBM - sum(W.values())
    assert f"{default_kv / 1e9:.1f}" == "45.5"
    assert default_kv > POOL  # default kvcached uses more than the 72 GB the comparison holds fixed
    assert glued("mt_kvc_default_kv_gb") == f"{default_kv / 1e9:.1f}"
    line = chapter_outputs.printed(nb(), "def elastic_at_peak").splitlines()[5]
    assert line == (f"ten reserved pages: {reserve / 1e9:.2f} GB per engine; default kvcached (0.95 of the card) "
                    f"leaves {default_kv / 1e9:.1f} GB for KV before activations")


def test_the_printed_table():
    out = chapter_outputs.printed(nb(), "def elastic_at_peak").splitlines()
    assert out[0] == "one page id maps 128 MiB = 1024 tokens of either model; one 4K sequence 0.54 GB"
    rows = {line.split()[0] + line.split()[1]: line.split() for line in out[2:4]}
    assert rows["Llama3"][3:9] == [f"{W['llama'] / 1e9:.1f}", "GB", "37", "seqs", "70", "seqs"]
    assert rows["Mistral7B"][2:8] == [f"{W['mistral'] / 1e9:.1f}", "GB", "40", "seqs", "70", "seqs"]
    assert out[4] == "both at peak at once: 77 sequences in fixed shares, 77 elastic (first come)"


def test_the_prose_links_and_names_the_mechanism():
    text = chapter_outputs.section(nb(), LABEL, end="multi_tenant_serving-cost-attribution")
    assert text.startswith(f"({LABEL})=\n### ")
    for ref in ("serving_kv_cache-paging", "serving_kv_cache-paged-kernel", "multi_tenant_serving-many-models",
                "multi_tenant_serving-gpu-sharing"):
        assert f"{{ref}}`{ref}`" in text
    for term in ("KVCACHED_CONTIGUOUS_LAYOUT", "compound page", "virtual ceiling", "KVCachePoolExhausted",
                 "_patched_allocate_slots", "_get_virtual_kv_capacity_bytes", "kvctl limit",
                 "KVCACHED_MIN_RESERVED_PAGES", "{glue:text}`mt_kvc_reserve_gb`", "{glue:text}`mt_kvc_default_kv_gb`"):
        assert term in text
    assert "maps and unmaps 2 MiB physical pages" not in text  # the default NVIDIA layout maps compound pages
    assert "request level, not by MIG" not in text
    for term in ("cuMemAddressReserve", "cuMemCreate", "cuMemMap", "block table", "vAttention",
                 "gpu_memory_utilization", "kvcachedrepo{", "prabhu2025vattention{", ":class: dropdown"):
        assert term in text
    assert text.count("```{admonition} In the interview") == 1
