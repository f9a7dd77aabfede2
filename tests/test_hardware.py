"""mha_kit.hardware: accelerator records, each citing its spec sheet."""
import re
from pathlib import Path

import pytest

import mha_kit as mk

BIB = (Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")


@pytest.mark.parametrize("name, bandwidth, flops, ridge", [
    ("a100-40gb", 1.555e12, 312e12, 312 / 1.555),  # A100 datasheet
    ("a100-80gb", 2.039e12, 312e12, 312 / 2.039),  # same chip, HBM2e
    ("h100-sxm", 3.35e12, 989e12, 989 / 3.35),  # H100 datasheet, dense bf16
    ("h200-sxm", 4.8e12, 989e12, 989 / 4.8),  # same chip, faster HBM3e
])
def test_rates_and_ridge_point(name, bandwidth, flops, ridge):
    gpu = mk.GPUS[name]
    assert (gpu.hbm_bandwidth, gpu.bf16_flops) == (bandwidth, flops)
    assert gpu.ridge_point == pytest.approx(ridge, rel=1e-12)


@pytest.mark.parametrize("name, gigabytes", [("a100-40gb", 40), ("a100-80gb", 80), ("h100-sxm", 80), ("h200-sxm", 141)])
def test_memory_sizes_from_the_datasheets(name, gigabytes):
    assert mk.GPUS[name].hbm_bytes == gigabytes * 1_000_000_000  # decimal GB, as the sheets print them
    assert f"{gigabytes} GB" in mk.GPUS[name].source


def test_memory_must_be_a_positive_integer():
    with pytest.raises(ValueError, match=r"^hbm_bytes must be a positive integer, got 80000000000\.0 \(float\)$"):
        _gpu(hbm_bytes=80e9)


def test_h100_sm_count_from_the_architecture_whitepaper():
    h100 = mk.GPUS["h100-sxm"]
    assert h100.num_sms == 132 and "132 SMs" in h100.source and h100.sram_bytes_per_sm is None


def test_a100_sram_as_the_flashattention_paper_describes_it():
    a100 = mk.GPUS["a100-40gb"]
    assert (a100.sram_bytes_per_sm, a100.num_sms) == (196_608, 108)  # 192 KiB per SM, 108 SMs


@pytest.mark.parametrize("name", [*mk.GPUS, *mk.CONSUMER_GPUS])
def test_every_record_cites_the_bibliography(name):
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", BIB, re.M))
    gpu = {**mk.GPUS, **mk.CONSUMER_GPUS}[name]
    assert gpu.name == name and gpu.source.strip()
    assert {key.strip() for key in gpu.cite.split(",")} <= keys


def _gpu(**overrides):
    fields = dict(name="toy", title="Toy", cite="nvidiah100", source="made up", hbm_bandwidth=1e12, bf16_flops=1e14,
                  hbm_bytes=10**9)
    return mk.Accelerator(**{**fields, **overrides})


@pytest.mark.parametrize("field", ["hbm_bandwidth", "bf16_flops"])
@pytest.mark.parametrize("bad", [0, -1.0, True, "1e12"])
def test_rates_must_be_positive_numbers(field, bad):
    with pytest.raises(ValueError, match=rf"^{field} must be a positive number, got {re.escape(repr(bad))}$"):
        _gpu(**{field: bad})


def test_sram_must_be_a_positive_integer():
    with pytest.raises(ValueError, match=r"^sram_bytes_per_sm must be a positive integer, got 1.5"):
        _gpu(sram_bytes_per_sm=1.5)
    assert _gpu(num_sms=4).ridge_point == 100.0


def test_rtx_4090_from_the_ada_whitepaper_appendix():
    """Appendix A, Table 2: dense BF16 (FP32 accumulate) 165.2 of 165.2/330.4; 1008 GB/sec; 24 GB; 73,728 KB of L2."""
    card = mk.CONSUMER_GPUS["rtx-4090"]
    assert "rtx-4090" not in mk.GPUS  # a GDDR6X card: not among the HBM parts the planner lists
    assert (card.bf16_flops, card.hbm_bandwidth, card.hbm_bytes) == (165.2e12, 1008e9, 24 * 10**9)
    assert card.bf16_flops == 330.4e12 / 2  # the sparse figure is twice the dense one (footnote 2)
    assert (card.num_sms, card.l2_bytes) == (128, 72 * 2**20)  # 73,728 KB = 72 MiB
    assert "165.2/330.4" in card.source and "GDDR6X" in card.source
    assert card.ridge_point == pytest.approx(165.2 / 1.008, rel=1e-12)


def test_nvlink_rates_each_way():
    # A100 datasheet 600 GB/s and DeepSeek's ISCA paper (sec. 4.1) 400 GB/s on the H800, both counted both ways
    assert mk.LINKS["nvlink3"].bytes_per_s == 600e9 / 2
    assert mk.LINKS["nvlink-h800"].bytes_per_s == 400e9 / 2
    assert mk.LINKS["nvlink-h800"].bytes_per_s / mk.LINKS["nvlink4"].bytes_per_s == pytest.approx(400 / 900)
    assert "900 GB/s to 400 GB/s" in mk.LINKS["nvlink-h800"].source


def test_deepseek_v3_h800_links_as_the_report_states_them():
    # DeepSeek-V3 report sec. 3.2.2: NVLink 160 GB/s, "roughly 3.2 times that of IB (50 GB/s)"
    links = mk.DEEPSEEK_V3_H800_LINKS
    assert (links["nvlink"], links["ib"]) == (160e9, 50e9)
    assert links["nvlink"] / links["ib"] == pytest.approx(3.2)
