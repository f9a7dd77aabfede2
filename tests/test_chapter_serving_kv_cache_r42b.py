"""Section serving_kv_cache-os-paging-differences of "Serving the KV cache": where the OS-paging analogy breaks.

The bytes of one 16-token KV block are redone without mha_kit, from Llama 3's published shapes
(meta-llama config.json: 8B has 32 layers, 70B 80, both 8 KV heads of 128) in bf16, against the x86-64 base
page of 4 KiB (Oracle Linux 8 "About Huge Pages"). The printed table must hold these numbers and the four rows
the section describes (what translates, what happens when memory runs out, who shares), in that order; the glued
values and the drill's 70B figures must agree; and the section must cite the paper's §4.2-§4.5 and link the
likenesses and the contrasts it names.
"""
import chapter_outputs

NB = chapter_outputs.notebook("serving_kv_cache")
LABEL = "serving_kv_cache-os-paging-differences"
OS_PAGE = 4 * 1024  # bytes, x86-64 base page
BLOCK, BF16 = 16, 2
TP = 8  # tensor-parallel degree of the section's sharding example
GPU_PAGE = 2 * 2**20  # kvcached's default physical page, kPageSize 2 MB
LLAMA = {"llama-3-8b": (32, 8, 128), "llama-3-70b": (80, 8, 128)}  # layers, KV heads, head size


def block_bytes(name, per_layer=True):
    layers, kv_heads, head_dim = LLAMA[name]
    one_layer = BLOCK * 2 * kv_heads * head_dim * BF16  # 16 tokens, K and V
    return one_layer if per_layer else one_layer * layers


def test_block_sizes():
    assert block_bytes("llama-3-8b") == 65_536 == 16 * OS_PAGE
    assert block_bytes("llama-3-8b", per_layer=False) == 2_097_152 == 512 * OS_PAGE
    assert block_bytes("llama-3-70b", per_layer=False) == 5 * 2**20 == 1280 * OS_PAGE


def test_printed_table():
    lines = chapter_outputs.printed(NB, "os_rows = ").splitlines()
    assert len(lines) == 6
    header = [part.strip() for part in lines[0].split("|")]
    assert header == ["", "OS page (x86-64)", "KV block (vLLM, 16 tokens, Llama 3 8B bf16)"]
    rows = [[part.strip() for part in line.split("|")] for line in lines[1:5]]
    layer, model = block_bytes("llama-3-8b"), block_bytes("llama-3-8b", per_layer=False)
    assert rows == [
        ["size in bytes", f"{OS_PAGE:,}", f"{layer:,} a layer, {model:,} in 32 layers"],
        ["what translates", "MMU, page table cached in the TLB", "the attention kernel, via the block table"],
        ["memory runs out", "evict single pages, page in on fault", "preempt whole requests: recompute or swap"],
        ["who shares", "forked processes, copy-on-write", "any request with the same prefix hash"],
    ]
    assert lines[5] == f"one block = {layer // OS_PAGE} OS pages a layer, {model // OS_PAGE} in the model"


def test_glued_values():
    glue = chapter_outputs.cell_glue(NB, "os_rows = ")
    assert glue == {"skv_os_block_layer": "64 KiB", "skv_os_block_model": "2 MiB",
                    "skv_os_pages_layer": str(block_bytes("llama-3-8b") // OS_PAGE),
                    "skv_os_pages_model": str(block_bytes("llama-3-8b", per_layer=False) // OS_PAGE),
                    "skv_os_layers": "32", "skv_os_tp": str(TP),
                    # one KV head of 128 per GPU at TP = 8: 16 x 2 x 1 x 128 x 2 bytes
                    "skv_os_block_layer_tp": f"{block_bytes('llama-3-8b') // TP // 1024} KiB",
                    "skv_os_gpu_page": "2 MiB",
                    "skv_os_blocks_per_gpu_page": str(GPU_PAGE // block_bytes("llama-3-8b"))}
    assert glue["skv_os_block_layer_tp"] == "8 KiB" and glue["skv_os_blocks_per_gpu_page"] == "32"


def test_section_text():
    text = " ".join(chapter_outputs.section(NB, LABEL, end="serving_kv_cache-block-size-kernels").split())
    assert text.startswith(f"({LABEL})= ### ")
    for locator in ("§4.2", "§4.3", "§4.4", "§4.5"):
        assert f"kwon2023vllm{{{locator}}}" in text
    for key in ("vllmasyncfree", "vllmallocateslots", "vllmprefixcaching", "vllmfreeblockqueue", "oraclehugepages"):
        assert key in text
    for ref in ("serving_kv_cache-paged-kernel", "kv_cache_basics-beam-search", "prefix_caching-hashed",
                "multi_tenant_serving-kvcached", "scheduler_design-preemption"):
        assert f"{{ref}}`{ref}`" in text
    assert "prabhu2025vattention{§5}" in text and "kvcachedrepo" in text
    # the V1 caveat on copy-on-write, the split between vAttention and kvcached, the MMU under the block table
    assert "vLLM V1 dropped copy-on-write" in text and "vllmparallelsampling{ParentRequest}" in text
    assert "on top of, not instead of, the GPU's MMU" in text and "with no MMU" not in text
    assert "it manages the memory of one engine" in text and "vllmsleepmode" in text
    assert "vllmslidingwindowmanager" in text and "cache_salt" in text and "{ref}`serving_kv_cache-reserve`" in text
    # the drill's 70B numbers, as computed above
    assert "$80 \\times 64$ KiB $= 5$ MiB, 1,280 pages" in text
    assert "{admonition} In the interview" in text and text.count(":class: dropdown followup") == 2
