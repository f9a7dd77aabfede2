"""weight_quantization r49: how int4 weights are packed and unpacked (weight_quantization-int4-packing).

Recomputed here from the constants of the sources, not from the chapter's functions: AutoAWQ's AWQ_ORDER and
AWQ_REVERSE_ORDER (awq/utils/packing_utils.py), GPTQ's sequential nibbles (AutoGPTQ qlinear_tritonv2.py pack),
the fp16 magic numbers of Marlin's dequant and AWQ's dequantize_s4_to_fp16x2 (decoded with struct's IEEE half),
and the lanes of gptq_marlin_repack's repack_tile.
"""
import re
import struct

from tests.chapter_outputs import assert_cited, book_labels, glued, notebook, printed, section

NB = notebook("weight_quantization")
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ awq/utils/packing_utils.py
AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def _half(bits16):
    return struct.unpack("<e", bits16.to_bytes(2, "little"))[0]


def _pack(codes):  # nibble i <- codes[i]
    return sum(c << 4 * i for i, c in enumerate(codes))


def _nibbles(word):
    return [(word >> 4 * i) & 0xF for i in range(8)]


def test_orders_and_packed_words():
    assert [AWQ_ORDER.index(j) for j in range(8)] == AWQ_REVERSE_ORDER
    gptq, awq = _pack(range(8)), _pack(AWQ_ORDER)
    assert f"{gptq:#010x}" == glued(NB, "pk49_gptq_hex") == "0x76543210"
    assert f"{awq:#010x}" == glued(NB, "pk49_awq_hex") == "0x75316420"
    assert [_nibbles(awq)[r] for r in AWQ_REVERSE_ORDER] == list(range(8))  # the reverse order undoes it
    moved = sum(AWQ_ORDER[i] != i for i in range(8))
    assert glued(NB, "pk49_moved") == str(moved) == "6"
    out = printed(NB, "pk_gptq = {")
    assert "AWQ order [0, 2, 4, 6, 1, 3, 5, 7], its inverse [0, 4, 1, 5, 2, 6, 3, 7]" in out
    assert "GPTQ  qweight (4, 16), qzeros (4, 2), scales (4, 16)" in out  # (K/8, N), (K/g, N/8)
    assert "AWQ   qweight (32, 2), qzeros (4, 2), scales (4, 16)" in out  # (K, N/8)


def test_drill_storage_of_a_4096_layer():
    k = n = 4096
    qweight, qzeros, scales = k * n // 8, (k // 128) * (n // 8), (k // 128) * n
    assert glued(NB, "pk49_d_qw") == f"{qweight:,}" == "2,097,152"
    assert glued(NB, "pk49_d_qw_mib") == f"{4 * qweight / 2**20:.0f}" == "8"
    assert glued(NB, "pk49_d_qz") == f"{qzeros:,}" == "16,384"
    assert glued(NB, "pk49_d_sc_kib") == f"{2 * scales / 2**10:.0f}" == "256"
    bits = (4 * k * n + 16 * scales + 4 * (k // 128) * n) / (k * n)  # codes + fp16 scales + 4-bit zeros
    assert glued(NB, "pk49_bpw") == f"{bits:.3f}" == "4.156"


def test_gptq_zero_point_of_zero_cannot_be_stored():
    word = 0
    for i, z in enumerate([0, 3, 3, 3, 3, 3, 3, 3]):  # AutoGPTQ: zeros -= 1, then OR each << 4i into a uint32
        word |= ((z - 1) & 0xFFFFFFFF) << 4 * i
    word &= 0xFFFFFFFF
    assert glued(NB, "pk49_zm1_hex") == f"{word:#010x}" == "0xffffffff"
    assert all(n + 1 == 16 for n in _nibbles(word))  # every zero point reads back as 16, not 0 or 3
    assert "read back +1: [16, 16, 16, 16, 16, 16, 16, 16]" in printed(NB, "pk_gptq = {")


def test_tiled_loop_matches_plain_product():
    out = printed(NB, "def w4a16_tiled")
    assert "GPTQ  tiled W4A16 == dequantize-then-matmul, bit for bit: True" in out
    assert "AWQ   tiled W4A16 == dequantize-then-matmul, bit for bit: True" in out
    assert "6 of every 8 codes in the wrong column, codes equal: False" in out


def test_the_0x6400_trick():
    assert (_half(0x6400), _half(0x6408), _half(0x2C00), _half(0xD480), _half(0xD400)) == (1024, 1032, 0.0625, -72, -64)
    for q in range(16):  # low nibble: 1024 + q; high nibble: 1024 + 16 q, then x 1/16 - 72
        assert _half(0x6400 | q) - 1032 == q - 8 and _half(0x6400 | q << 4) / 16 - 72 == q - 8
        assert _half(0x6400 | q) - 1024 == q and _half(0x6400 | q << 4) / 16 - 64 == q
    out = printed(NB, "def lop3_dequant")
    codes = [int(v) for v in re.search(r"codes \[([\d, ]+)\] packed", out).group(1).split(", ")]
    word = _pack([codes[j] for j in AWQ_ORDER])  # nibble i holds element AWQ_ORDER[i]
    assert f"packed interleaved: {word:#010x}" in out
    # the conversion yields nibbles 0, 4, 1, 5, 2, 6, 3, 7, which the interleave maps back to elements 0..7
    assert [AWQ_ORDER[i] for i in (0, 4, 1, 5, 2, 6, 3, 7)] == list(range(8))
    assert f"AWQ constants:    {codes}" in out
    assert f"Marlin constants: {[c - 8 for c in codes]}" in out
    assert "all 16 codes give q - 8 exactly: True" in out
    # dequantize.cuh: 4 lop3, 1 shr, 2 sub.f16x2 and 2 fma.f16x2 for 8 codes; the two halves of a
    # 32-bit word are one pair, so each lop3 / sub / fma produces two codes
    ops = {"lop3": 8 // 2, "shr": 1, "sub": 8 // 4, "fma": 8 // 4}
    for kind, count in ops.items():
        assert glued(NB, f"pk49_{kind}") == str(count), kind
    assert glued(NB, "pk49_instr") == str(sum(ops.values())) == "9"


def test_marlin_repack_lanes():
    out = printed(NB, "gptq_marlin_repack: lane")
    for lane in (0, 1, 4, 31):  # repack_tile: tc_row = (t % 4) * 2, offsets 0, 1, 8, 9; columns t // 4 and + 8
        ks = [(lane % 4) * 2 + o for o in (0, 1, 8, 9)]
        words = {(k // 8, col) for k in ks for col in (lane // 4, lane // 4 + 8)}
        assert len(words) == 4
        assert re.search(rf"^\s*{lane}\s+\[{', '.join(map(str, ks))}\]\s+\({lane // 4}, {lane // 4 + 8}\)\s+4\s+1$",
                         out, re.M), lane
    assert glued(NB, "pk49_words") == "4"
    k, n = 8192, 8192  # Llama 3 70B o_proj
    assert (k // 8) * n == (k // 16) * (n * 16 // 8)  # same number of int32s after the repack
    assert glued(NB, "pk49_o_mib") == f"{4 * (k // 8) * n / 2**20:.0f}" == "32"
    assert "GPTQ (1024, 8192) -> Marlin (512, 16384), 32 MiB both" in out


def test_section_cites_links_and_boxes():
    text = section(NB, "weight_quantization-int4-packing", end="weight_quantization-preshuffle")
    assert_cited(text, ["autogptqtriton", "autoawqpacking", "vllmawqtriton", "vllmawqdequant", "vllmmarlinrepack",
                        "marlinkernel", "marlinrepo"])
    labels = book_labels()
    for ref in ("weight_quantization-arithmetic", "weight_quantization-w4a16-w8a8", "weight_quantization-slower",
                "weight_quantization-kernel-choice", "weight_quantization-preshuffle"):
        assert f"{{ref}}`{ref}`" in text and ref in labels, ref
    assert "{admonition} In the interview" in text and "*The setting.*" in text
    assert text.count(":class: dropdown followup") == 1 and "Drill:" in text
    assert "Every kernel unpacks in the same two steps" not in text  # Marlin / AWQ CUDA use lop3, not shift+mask
    assert "two codes per instruction" not in text and "c_ptr.type.element_ty" in text
