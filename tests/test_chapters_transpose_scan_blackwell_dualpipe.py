"""The numbers of the sections on a naive transpose's writes, a scan's work and span, Blackwell's ratios, DualPipe,
weight sync over a 400G port and NVLink 5 against the NIC, recomputed independently (products written out)."""
import math

import mha_kit as mk


def test_transpose_naive_write_uses_an_eighth_of_the_bytes():
    # 32 lanes each write 4 B into a different 32-byte sector: 128 useful of 32 * 32 moved
    assert mk.sectors_touched([4 * 4096 * lane for lane in range(32)], 4) == 32
    assert 128 / (32 * 32) == 0.125


def test_work_span_ratio_at_a_million():
    n, p, log_n = 2**20, 132 * 128, 20
    hs = (n * log_n - (n - 1)) / p + log_n
    bl = 2 * (n - 1) / p + 2 * log_n
    assert round(hs / bl) == 7


def test_blackwell_ratios():
    assert round(7.7 / 3.35, 1) == 2.3
    assert mk.GPUS["b200-hgx"].bf16_flops / mk.GPUS["h100-sxm"].bf16_flops == 2.25e15 / 989e12
    assert 180 / 80 == 2.25


def test_dualpipe_example():
    assert (8 - 1) * (1 + 2) == 21  # 1F1B
    assert (8 / 2 - 1) * ((1 + 2) + 2 - 3 * 1) == 6  # DualPipe with F&B = F + B


def test_weight_sync_over_a_400g_port():
    nbytes = 2 * 8_030_261_248  # Llama 3 8B in bf16
    assert math.isclose(nbytes / 50e9, 0.3212, rel_tol=1e-3)
    assert round(nbytes / 64e9 * 1e3) == 251


def test_nvlink5_over_the_nic():
    assert 900e9 / 50e9 == 18
