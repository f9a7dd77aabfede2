"""Section serving_kv_cache-block-size-kernels of "Serving the KV cache".

The kernel count of vLLM's paged_attention_v1.cu (its head-size and block-size switches, read at commit
03f86117) and the last-block waste and table entries for two request-length distributions, recomputed in
pure Python from ceil(n / B) and compared with what the chapter printed and glued.
"""
import chapter_outputs

NB = chapter_outputs.notebook("serving_kv_cache")
HEAD_SIZES = 9  # 32, 64, 80, 96, 112, 120, 128, 192, 256 in the head-size switch
BLOCKS = (16, 32, 128, 256)
EVEN = list(range(1, 8193))
TAIL = [50] * 990 + [10_000] * 10


def waste_row(lengths, block):
    blocks = [-(-n // block) for n in lengths]
    waste = [b * block - n for b, n in zip(blocks, lengths)]
    return sum(waste) / len(waste), sum(waste) / (sum(blocks) * block), sum(blocks) / len(blocks)


def test_kernel_count():
    assert HEAD_SIZES * 3 * 2 == 54
    assert chapter_outputs.glued(NB, "skv_bsk_kernels") == "54"
    out = chapter_outputs.printed(NB, "sparse_variants = 2")
    assert " 54 kernels" in out and "108 kernels" in out


def test_kernels_per_added_block_size():
    # one more block size adds one kernel per head size and variant: 18, a third of 54, not 54 again;
    # adding 64, 128 and 256 together doubles the count
    assert chapter_outputs.glued(NB, "skv_bsk_per_size") == str(HEAD_SIZES * 2) == "18"
    assert chapter_outputs.glued(NB, "skv_bsk_six") == str(HEAD_SIZES * 6 * 2) == "108" == str(2 * 54)


def test_even_lengths_waste_half_a_block():
    lines = chapter_outputs.printed(NB, "def paged_waste").splitlines()[1:]
    for line, block in zip(lines, BLOCKS):
        mean, _, entries = waste_row(EVEN, block)
        assert mean == (block - 1) / 2  # lengths 1..8,192 fall evenly on every offset in a block
        assert entries == (8192 / block + 1) / 2
        assert line.split()[1] == f"{(block - 1) / 2:.1f}"  # the chapter's even-length waste column


def test_printed_table():
    lines = chapter_outputs.printed(NB, "def paged_waste").splitlines()[1:]
    assert len(lines) == len(BLOCKS)
    for line, block in zip(lines, BLOCKS):
        e, t = waste_row(EVEN, block), waste_row(TAIL, block)
        expect = [str(block), f"{e[0]:.1f}", f"{e[1]:.1%}", f"{e[2]:.1f}", "|", f"{t[0]:.1f}", f"{t[1]:.1%}", f"{t[2]:.1f}"]
        assert line.split() == expect


def test_glued_shares():
    assert chapter_outputs.glued(NB, "skv_bsk_even256") == f"{waste_row(EVEN, 256)[1]:.1%}" == "3.0%"
    assert chapter_outputs.glued(NB, "skv_bsk_tail256") == f"{waste_row(TAIL, 256)[1]:.0%}" == "58%"
    assert chapter_outputs.glued(NB, "skv_bsk_tail16") == f"{waste_row(TAIL, 16)[1]:.1%}" == "8.5%"



def test_follow_up_numbers():
    text = " ".join(chapter_outputs.section(NB, "serving_kv_cache-block-size-kernels").split())
    assert f"its waste is {256 - 50} slots" in text  # a 50-token request's empty slots in a 256-token block
    entries16, entries256 = -(-8000 // 16), -(-8000 // 256)
    assert f"\\lceil 8000/16 \\rceil = {entries16}$ entries" in text
    spare = entries256 * 256 - 8000
    assert f"wastes {spare} of {entries256 * 256:,} slots, {spare / (entries256 * 256):.1%}" in text
    assert f"({entries256} entries against {entries16})" in text and "about sixteen times smaller" in text
    assert 15 < entries16 / entries256 < 16  # "about sixteen times", not exactly
