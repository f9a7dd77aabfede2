"""Section serving_kv_cache-block-table-bytes of "Serving the KV cache".

The bytes of vLLM V1's block tables, recomputed in pure Python from BlockTable.__init__ and
MultiGroupBlockTable.__init__ (vllm/v1/worker/block_table.py, read at commit 01edfd09): an int32 table of
max_num_reqs x max_num_blocks_per_req, where max_num_blocks_per_req = ceil(max_model_len / B) rounded up
to a multiple of 128 / B, a pinned CPU copy of the same size, and an int64 slot mapping of
max_num_batched_tokens entries; and the bytes of one 16-token block of Llama 3 8B and 70B cache in bf16
from the models' shapes written out (not through mha_kit), compared with what the chapter printed,
glued and wrote.
"""
import chapter_outputs

NB = chapter_outputs.notebook("serving_kv_cache")
LABEL = "serving_kv_cache-block-table-bytes"
B = 16
INT32, INT64, BF16 = 4, 8, 2
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40
# Llama 3 config.json: layers, KV heads, head size
LLAMA = {"llama-3-8b": (32, 8, 128), "llama-3-70b": (80, 8, 128)}


def kv_bytes_per_token(name):
    layers, kv_heads, head_dim = LLAMA[name]
    return 2 * layers * kv_heads * head_dim * BF16  # K and V, every layer


def entries_per_request(max_model_len, block=B):
    align = 128 // block
    return -(-(-(-max_model_len // block)) // align) * align


def human(n):  # the book's unit choice for these exact powers of two
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            value = n / size
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} B"


def test_padding_leaves_these_lengths_alone():
    # 8K, 32K and 128K at B = 16 are already multiples of 128 / 16 = 8 entries
    assert [entries_per_request(n) for n in (8_192, 32_768, 131_072)] == [512, 2_048, 8_192]
    assert entries_per_request(8_000) == 504 and entries_per_request(1) == 8  # 500 and 1 padded up to 8s


def test_table_rows():
    lines = chapter_outputs.printed(NB, "TABLE_ENTRY_BYTES = 4").splitlines()
    rows = [line.split() for line in lines[1:7]]
    expect = []
    for reqs in (256, 1024):
        for length in (8_192, 32_768, 131_072):
            table = reqs * entries_per_request(length) * INT32
            addressed = reqs * length * kv_bytes_per_token("llama-3-70b")
            expect.append([f"{reqs:,}", f"{length:,}", f"{entries_per_request(length):,}",
                           *human(table).split(), *human(table).split(), *human(addressed).split()])
    assert rows == expect
    assert 1024 * 8192 * INT32 == 32 * MIB and 1024 * 131_072 * 327_680 == 40 * TIB
    assert lines[7] == f"slot_mapping: 8,192 tokens x 8 B = {human(8192 * INT64)} on the GPU and 64 KiB pinned"
    assert 8192 * INT64 == 64 * KIB


def test_glued_table_sizes():
    assert chapter_outputs.glued(NB, "skv_bt_small") == human(256 * 512 * INT32) == "512 KiB"
    assert chapter_outputs.glued(NB, "skv_bt_big") == human(1024 * 8192 * INT32) == "32 MiB"
    assert chapter_outputs.glued(NB, "skv_bt_slot") == "64 KiB"


def test_block_against_entry():
    out = chapter_outputs.printed(NB, "POOL = 40 * 2**30").splitlines()
    assert len(out) >= 3  # the two block lines the zip below checks, then the pool line
    for line, name in zip(out, ("llama-3-8b", "llama-3-70b")):
        block = B * kv_bytes_per_token(name)
        assert line == (f"{name}: a 16-token block holds {human(block)} of cache, its table entry 4 B:"
                        f" 1 part in {block // INT32:,}")
    assert B * kv_bytes_per_token("llama-3-70b") == 5 * MIB and B * kv_bytes_per_token("llama-3-8b") == 2 * MIB
    assert chapter_outputs.glued(NB, "skv_bt_ratio_70b") == f"{5 * MIB // 4:,}" == "1,310,720"
    # the blocks quoted in the section's opening answer
    assert chapter_outputs.glued(NB, "skv_bt_block_8b") == human(B * kv_bytes_per_token("llama-3-8b")) == "2 MiB"
    assert chapter_outputs.glued(NB, "skv_bt_block_70b") == human(B * kv_bytes_per_token("llama-3-70b")) == "5 MiB"
    share = 32 * MIB / (40 * GIB)
    assert out[2] == f"the largest table, 32 MiB, against a 40 GiB pool: {share:.2%} of it"
    assert chapter_outputs.glued(NB, "skv_bt_pool_share") == "0.08%"


def test_prose_numbers():
    text = " ".join(chapter_outputs.section(NB, LABEL, end="serving_kv_cache-prefix-sharing").split())
    assert "(5 MiB for Llama 3 70B in bf16)" in text and 5 * MIB == B * kv_bytes_per_token("llama-3-70b")
    assert "make 32 MiB on the GPU and 32 MiB pinned on the host" in text
    # the drill: 256 requests, 32K, blocks of 16 and 32
    assert 256 * entries_per_request(32_768) * INT32 == 2 * MIB
    assert "$256 \\times 2048 \\times 4$ B $= 2$ MiB" in text
    assert entries_per_request(32_768, 32) == 1024 and 256 * 1024 * INT32 == 1 * MIB
    assert "halve the entries to 1,024 a row and the table to 1 MiB" in text
    # the follow-up: 1,024 live rows of 8,192 entries copied whole each step
    assert 1024 * entries_per_request(131_072) * INT32 == 32 * MIB
    assert "1,024 live rows of 8,192 entries (128K at $B = 16$) are 32 MiB per step" in text
    assert "could address 40 TiB of Llama 3 70B cache" in text
    # the answer says where the per-step whole-row copy applies and what the CPU fill costs
    assert "vLLM V1's classic `GPUModelRunner`" in text and "Model Runner V2" in text
    assert "in proportion to the blocks actually held" in text
    assert "whenever $B \\le 128$, for every backend" in text
    assert "the A100 80 GB included" in text and "other than the A100 and to 256 on smaller ones" not in text


def test_kernel_block_multiplier():
    # BlockTable.__init__: entries count kernel blocks when the kernel's block is smaller
    manager_block, kernel_block = 64, 16
    per_req = entries_per_request(32_768, manager_block) * (manager_block // kernel_block)
    assert per_req == 512 * 4 == entries_per_request(32_768, kernel_block)
    # the section states the same rule: read it
    text = " ".join(chapter_outputs.section(NB, LABEL, end="serving_kv_cache-prefix-sharing").split())
    assert ("When the attention kernel uses smaller blocks than the allocator, `BlockTable.__init__` multiplies the"
            " count by $B$ / kernel block size, so the entries count kernel blocks") in text
