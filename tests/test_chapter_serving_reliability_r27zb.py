"""Section serving_reliability-capacity-vs-bandwidth: an RTX 5080 against an M4 Pro at batch 1.

Recomputed by hand: Llama 3 8B and 70B parameter counts from their configs (d, layers, FFN, heads, vocabulary),
Q4_0's 18 bytes per 32 weights, the 5080's 16 GB (2 GB reserved) at an assumed 960 GB/s, the M4 Pro's 273 GB/s
and 3/4 of 64 GB, PCIe 5.0 x16 at 64 GB/s; compared with the chapter's stored outputs.
"""
import pytest
import chapter_outputs

GB = 1e9
NB = chapter_outputs.notebook("serving_reliability")
RESIDENT, PCIE, MAC_BW, RTX_BW = 14e9, 64e9, 273e9, 960e9
Q4 = 18 / 32  # bytes per weight: 16 bytes of codes and an fp16 scale per 32 weights


def llama_params(d, layers, ffn, heads, kv_heads, vocab):
    """Dense Llama: attention (q, o full; k, v with kv_heads), SwiGLU FFN, two norms a layer, final norm, untied head."""
    hd = d // heads
    layer = 2 * d * d + 2 * d * kv_heads * hd + 3 * d * ffn + 2 * d
    total = layers * layer + 2 * vocab * d + d
    return total, total - vocab * d  # held, read per token (the input embedding gives one row)


L8 = llama_params(4096, 32, 14336, 32, 8, 128256)
L70 = llama_params(8192, 80, 28672, 64, 8, 128256)
CASES = {  # key: (bytes held, bytes read per token)
    "8b16": (2 * L8[0], 2 * L8[1]),
    "8b4": (Q4 * L8[0], Q4 * L8[1]),
    "32b4": (Q4 * 32e9, Q4 * 32e9),
    "70b4": (Q4 * L70[0], Q4 * L70[1]),
}


def glued(key):
    return chapter_outputs.glued(NB, key)


def rtx(read, bw=RTX_BW):
    on = min(read, RESIDENT)
    return 1 / (on / bw + (read - on) / PCIE)


def test_parameter_counts():
    assert L8[0] == 8_030_261_248 and L70[0] == 70_553_706_496


@pytest.mark.parametrize("key", list(CASES))
def test_tokens_per_second(key):
    held, read = CASES[key]
    assert glued(f"sr_mac_held_{key}") == f"{held / GB:.1f}"
    assert glued(f"sr_mac_rtx_{key}") == f"{rtx(read):.1f}"
    assert glued(f"sr_mac_m4_{key}") == f"{MAC_BW / read:.1f}"


def test_fit_and_winners():
    fits = {k: h <= RESIDENT for k, (h, _) in CASES.items()}
    assert fits == {"8b16": False, "8b4": True, "32b4": False, "70b4": False}
    assert all(h <= 48e9 for h, _ in CASES.values()) and glued("sr_mac_gpu_gb") == "48"
    for bw in (500e9, 960e9, 1500e9):  # the claim: the same winners anywhere in 500-1,500 GB/s
        wins = {k: rtx(r, bw) > MAC_BW / r for k, (_, r) in CASES.items()}
        assert wins == {"8b16": True, "8b4": True, "32b4": False, "70b4": False}


def test_crossover():
    k = lambda bw: (1 / PCIE - 1 / bw) / (1 / PCIE - 1 / MAC_BW)  # noqa: E731
    assert glued("sr_mac_cross_gb") == f"{k(RTX_BW) * RESIDENT / GB:.1f}" == "17.1"
    assert (glued("sr_mac_cross_lo"), glued("sr_mac_cross_hi")) == (f"{k(500e9):.2f}", f"{k(1500e9):.2f}")
    assert glued("sr_mac_resident_gb") == "14"
    out = chapter_outputs.printed(NB, "compute at the 5080's")
    assert "3.7 TFLOP/s" in out and "1.0 TFLOP/s" in out


DDR = 2 * 8 * 5.6e9  # two channels of DDR5-5600: the -ngl regime, overflow layers on the CPU


def test_ngl_column_and_crossover():
    ngl = {k: rtx(r) if r <= RESIDENT else 1 / (RESIDENT / RTX_BW + (r - RESIDENT) / DDR) for k, (_, r) in CASES.items()}
    for k, v in ngl.items():
        assert glued(f"sr_mac_ngl_{k}") == f"{v:.1f}"
    assert ngl["32b4"] > MAC_BW / CASES["32b4"][1] > rtx(CASES["32b4"][1])  # between the two crossovers
    assert ngl["70b4"] < MAC_BW / CASES["70b4"][1] / 2 < rtx(CASES["70b4"][1]) * 3
    k = (1 / DDR - 1 / RTX_BW) / (1 / DDR - 1 / MAC_BW)
    assert glued("sr_mac_cross_ngl_k") == f"{k:.2f}" == "1.35"
    assert glued("sr_mac_cross_ngl_gb") == f"{k * RESIDENT / GB:.1f}" == "18.9"
    assert glued("sr_mac_ddr_gbs") == "89.6"


def test_reserve_overflow_link_and_multi_card():
    kv = 80 * 2 * 8 * 128 * 2 * 8192  # layers x (K, V) x KV heads x head dim x bf16 bytes x tokens
    assert glued("sr_mac_kv70_gb") == f"{kv / GB:.1f}"
    assert glued("sr_mac_70_total_gb") == f"{(CASES['70b4'][0] + kv + 2e9) / GB:.1f}" and CASES["70b4"][0] + kv + 2e9 <= 48e9
    assert glued("sr_mac_8b16_file_over") == f"{(CASES['8b16'][0] - RESIDENT) / GB:.1f}" == "2.1"
    assert glued("sr_mac_8b16_read_over") == f"{(CASES['8b16'][1] - RESIDENT) / GB:.1f}" == "1.0"
    r70 = CASES["70b4"][1]
    share = ((r70 - RESIDENT) / PCIE) / (RESIDENT / RTX_BW + (r70 - RESIDENT) / PCIE)
    assert glued("sr_mac_link_share") == f"{share:.0%}" == "96%"
    two = 1 / (2 * RESIDENT / RTX_BW + (r70 - 2 * RESIDENT) / PCIE)
    assert glued("sr_mac_two_pp") == f"{two:.1f}" and two < MAC_BW / r70
    assert glued("sr_mac_three_pp") == f"{RTX_BW / r70:.0f}"
