"""Section weight_quantization-awq-or-fp8-batch-32 of "Weight quantization for serving".

One decode step of Llama 3 70B at batch 32 with 2,048 tokens of cache a sequence, and the GPU time of a
request (its prefill plus a 32nd of each of N decode steps), recomputed from the datasheet rates and the
model's shape written out, not through the chapter's cell or mha_kit, and compared with what the cells
printed and glued.
"""
import math

import pytest
import chapter_outputs

# Llama 3 70B (config.json): 80 layers, 64 query heads and 8 KV heads of 128
L, H, KV, HD = 80, 64, 8, 128
P70 = 70_553_706_496  # every parameter, embedding table and untied output head included
BW, BF16, FP8 = 3.35e12, 989e12, 1979e12  # H100 SXM: HBM B/s, dense bf16 and FP8 FLOP/s
HBM = 80e9
BATCH, CTX = 32, 2048
INT4 = 4 + (16 + 4) / 128  # AutoAWQ gemm.py: fp16 scale and a 4-bit zero point (qzeros, eight to an int32) per 128
SCHEMES = {  # weight bits, FLOP/s of the weights' products, bytes per cached element
    "BF16": (16, BF16, 2), "W4A16 (AWQ g128)": (INT4, BF16, 2), "W4A16 + FP8 KV": (INT4, BF16, 1),
    "FP8 (W8A8)": (8, FP8, 2), "FP8 + FP8 KV": (8, FP8, 1)}
KV_TOKEN_BF16 = 2 * L * KV * HD * 2  # 327,680 bytes: K and V, every layer


def decode(bits, rate, kv_b):
    w, kv = P70 * bits / 8, BATCH * CTX * 2 * L * KV * HD * kv_b
    attn = 2 * L * (2 * H * CTX * HD) * BATCH  # scores and mix of one query per sequence, every layer
    mem, cmp_ = (w + kv) / BW, 2 * P70 * BATCH / rate + attn / BF16
    return w, kv, 2 * P70 * BATCH + attn, mem, cmp_


def prefill(bits, rate, kv_b):
    attn = 2 * L * (2 * H * CTX * CTX * HD) // 2  # causal: half the square
    mem = (P70 * bits / 8 + CTX * 2 * L * KV * HD * kv_b) / BW
    return max(mem, 2 * P70 * CTX / rate + attn / BF16)


STEP = {n: max(decode(*s)[3:]) for n, s in SCHEMES.items()}
PRE = {n: prefill(*s) for n, s in SCHEMES.items()}


def request(name, out):
    return PRE[name] + out * STEP[name] / BATCH


def even(w4, f8):
    return (PRE[w4] - PRE[f8]) / ((STEP[f8] - STEP[w4]) / BATCH)


NB = chapter_outputs.notebook("weight_quantization")


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_cache_bytes_exact():
    assert KV_TOKEN_BF16 == 327_680 and BATCH * CTX * KV_TOKEN_BF16 == 21_474_836_480
    assert glued("aw43_kv_gb") == "21.5" and glued("aw43_kv_gib") == "20"
    assert glued("aw43_kv_share") == f"{BATCH * CTX * KV_TOKEN_BF16 / (P70 * INT4 / 8):.0%}" == "59%"


def test_step_table_printed():
    out = chapter_outputs.printed(NB, "def aw_step(").splitlines()
    rows = {line[:22].strip(): line[22:].split() for line in out[1:]}
    assert list(rows) == list(SCHEMES)
    for name, s in SCHEMES.items():
        w, kv, flops, mem, cmp_ = decode(*s)
        gpus = math.ceil((w + kv) / (0.9 * HBM))
        bound = "memory" if mem >= cmp_ else "compute"
        want = [f"{w / 1e9:.1f}", f"{kv / 1e9:.1f}", f"{flops / 1e12:.2f}", f"{1e3 * mem:.1f}", f"{1e3 * cmp_:.1f}",
                f"{1e3 * max(mem, cmp_):.1f}", bound, str(gpus)]
        assert rows[name] == want, name
        assert bound == "memory"  # the section's claim: every scheme is memory-bound at batch 32
    assert [rows[n][-1] for n in SCHEMES] == ["3", "1", "1", "2", "2"]


def test_step_glue():
    for name, key in zip(SCHEMES, ("bf16", "w4", "w4kv8", "fp8", "fp8kv8")):
        assert glued(f"aw43_step_{key}") == f"{1e3 * STEP[name]:.1f}"
    assert glued("aw43_step_w4") == "17.4" and glued("aw43_step_fp8") == "27.5"
    assert glued("aw43_speedup") == f"{STEP['FP8 (W8A8)'] / STEP['W4A16 (AWQ g128)']:.2f}" == "1.58"
    assert glued("aw43_fp8_cmp") == f"{1e3 * decode(*SCHEMES['FP8 (W8A8)'])[4]:.1f}"
    assert glued("aw43_intensity") == f"{2 * P70 * BATCH / (P70 + BATCH * CTX * KV_TOKEN_BF16):.0f}" == "49"
    assert glued("aw43_ridge_fp8") == f"{FP8 / BW:.0f}"
    assert glued("aw43_int4_bits") == f"{INT4:.2f}" == "4.16"
    assert glued("aw43_w4_gb") == f"{P70 * INT4 / 8 / 1e9:.1f}" and glued("aw43_fp8_gb") == f"{P70 / 1e9:.1f}"


def test_request_table_printed():
    out = chapter_outputs.printed(NB, "def aw_request(").splitlines()
    rows = {line[:22].strip(): line[22:].split() for line in out[1:6]}
    for name in SCHEMES:
        want = [f"{1e3 * PRE[name]:.1f}"] + [f"{1e3 * request(name, n):.1f}" for n in (128, 256, 512, 1024)]
        assert rows[name] == want, name
    assert out[6].endswith(f"{even('W4A16 (AWQ g128)', 'FP8 (W8A8)'):.0f} tokens (W4A16 wins above it)")
    assert out[7].endswith(f"{even('W4A16 (AWQ g128)', 'FP8 + FP8 KV'):.0f} tokens (W4A16 wins above it)")


def test_break_even_and_request_glue():
    same, mixed = even("W4A16 (AWQ g128)", "FP8 (W8A8)"), even("W4A16 (AWQ g128)", "FP8 + FP8 KV")
    assert abs(same - even("W4A16 + FP8 KV", "FP8 + FP8 KV")) < 1e-6  # the cache's bytes cancel
    assert glued("aw43_even_same") == f"{same:.0f}" == "462"
    assert glued("aw43_even_mixed") == f"{mixed:.0f}" == "677"
    assert glued("aw43_pre_w4") == f"{1e3 * PRE['W4A16 (AWQ g128)']:.0f}"
    assert glued("aw43_pre_fp8") == f"{1e3 * PRE['FP8 (W8A8)']:.0f}"
    for key, name in (("w4", "W4A16 (AWQ g128)"), ("fp8", "FP8 (W8A8)")):
        for n in (128, 1024):
            assert glued(f"aw43_req_{key}_{n}") == f"{1e3 * request(name, n):.1f}"
    assert glued("aw43_req_fp8kv8_128") == f"{1e3 * request('FP8 + FP8 KV', 128):.1f}"
    # FP8 wins below the break-even, W4A16 above it
    assert request("FP8 (W8A8)", 256) < request("W4A16 (AWQ g128)", 256)
    assert request("FP8 (W8A8)", 512) > request("W4A16 (AWQ g128)", 512)


def test_break_even_with_measured_fp8_rate():
    """FP8 prefill GEMMs at 1.6x the bf16 rate instead of 2x: the break-even falls."""
    pre_real = prefill(8, 1.6 * BF16, 2)
    real = (PRE["W4A16 (AWQ g128)"] - pre_real) / ((STEP["FP8 (W8A8)"] - STEP["W4A16 (AWQ g128)"]) / BATCH)
    assert glued("aw43_even_real") == f"{real:.0f}" == "347"
    assert real < even("W4A16 (AWQ g128)", "FP8 (W8A8)")


def test_cache_room_sequences():
    """Sequences of 2,048 bf16 tokens in 90% of HBM: W4A16 on one H100, FP8 on two."""
    seq = CTX * KV_TOKEN_BF16
    w4 = int((0.9 * HBM - P70 * INT4 / 8) // seq)
    fp8 = int((2 * 0.9 * HBM - P70 * 8 / 8) // seq)
    assert glued("aw43_seqs_w4") == str(w4) == "52" and glued("aw43_seqs_fp8") == str(fp8) == "109"
    assert fp8 > 3 * BATCH  # FP8 at batch 32 on two GPUs leaves most of its cache room empty


@pytest.mark.parametrize("label", ["weight_quantization-w4a16-w8a8", "weight_quantization-w4a8",
                                   "weight_quantization-slower", "weight_quantization-kernel-choice",
                                   "weight_quantization-fp8-w4a16-w4a8"])
def test_linked_sections_exist(label):
    text = chapter_outputs.section(NB, "weight_quantization-awq-or-fp8-batch-32", end="weight_quantization-fp4-fp8")
    assert f"{{ref}}`{label}`" in text
    anchors = "".join("".join(c["source"]) for c in NB["cells"] if c["cell_type"] == "markdown")
    assert f"({label})=\n" in anchors  # the linked label still exists
