"""Disaggregated serving: KV transfer time, prefill FLOPs, and the link and node records."""
import dataclasses

import pytest

import mha_kit as mk

LLAMA_8B, LLAMA_70B = mk.MODEL_FACTS["llama-3-8b"], mk.MODEL_FACTS["llama-3-70b"]


def test_transfer_time_is_cache_bytes_over_the_link_rate():
    # Llama 3 70B: 80 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 327,680 bytes per token.
    assert mk.kv_transfer_seconds(LLAMA_70B.config, 1000, 50e9) == 1000 * 327_680 / 50e9
    assert mk.kv_transfer_seconds(LLAMA_70B.config, 1000, 50e9, fmt="fp8_e4m3") == 1000 * 163_840 / 50e9
    # DeepSeek-V2 caches d_c + d_rope = 576 numbers per token and layer, 60 layers.
    assert mk.kv_transfer_seconds(mk.PRESETS["deepseek-v2"], 10, 1e9) == 10 * 60 * 576 * 2 / 1e9


def test_prefill_flops_of_llama_3_8b_by_hand():
    # Per layer and token: Q and O 4096 x 4096 each, K and V 4096 x 1024 each, SwiGLU 3 x 4096 x 14336.
    weights = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    assert weights == 6_979_321_856
    logits = 2 * 128_256 * 4096  # the last token's output head
    for n in (1, 1000):
        attention = 32 * 2 * 32 * 128 * n * (n + 1)  # sum over i of i keys, scores and mix, 32 heads
        assert mk.prefill_flops(LLAMA_8B, n) == 2 * n * weights + logits + attention


def test_prefill_seconds_and_the_quadratic_term():
    gpu = mk.GPUS["h100-sxm"]
    assert mk.prefill_seconds(LLAMA_70B, 4096, gpu.bf16_flops) == mk.prefill_flops(LLAMA_70B, 4096) / 989e12
    # Doubling a long prompt more than doubles the prefill, never the transfer.
    assert mk.prefill_flops(LLAMA_8B, 65536) > 2 * mk.prefill_flops(LLAMA_8B, 32768)
    assert mk.kv_transfer_seconds(LLAMA_8B.config, 65536, 1e9) == 2 * mk.kv_transfer_seconds(LLAMA_8B.config, 32768, 1e9)


def test_link_and_node_records():
    assert mk.LINKS["nvlink4"].bytes_per_s == 450e9  # 900 GB/s is both directions together
    assert mk.LINKS["pcie5-x16"].bytes_per_s == 64e9
    assert mk.LINKS["ib-ndr"].bytes_per_s == 400e9 / 8  # 400 Gb/s
    assert mk.LINKS["pcie4-x4"].bytes_per_s == 16e9 * 4 / 8  # 16 GT/s per lane, 4 lanes
    assert mk.LINKS["pcie4-x16"].bytes_per_s == 16e9 * 16 / 8  # 16 lanes: half the L40S datasheet's 64 GB/s both ways
    node = mk.NODES["dgx-h100"]
    assert (node.num_gpus, node.host_memory_bytes, node.ssd_bytes) == (8, 2 * 10**12, 30_720 * 10**9)
    assert mk.GPUS[node.gpu].hbm_bytes == 80 * 10**9
    for record in (*mk.LINKS.values(), *mk.NODES.values()):
        assert record.cite and record.source


def test_record_errors():
    link = mk.LINKS["ib-ndr"]
    with pytest.raises(ValueError, match=r"^bytes_per_s must be a positive number, got 0$"):
        dataclasses.replace(link, bytes_per_s=0)
    node = mk.NODES["dgx-h100"]
    with pytest.raises(ValueError, match=r"^gpu must be a key of GPUS \[.*\], got 'b200'$"):
        dataclasses.replace(node, gpu="b200")
    with pytest.raises(ValueError, match=r"^ssd_link must be a key of LINKS \[.*\], got 'usb'$"):
        dataclasses.replace(node, ssd_link="usb")
    with pytest.raises(ValueError, match=r"^num_gpus must be a positive integer, got 0$"):
        dataclasses.replace(node, num_gpus=0)


@pytest.mark.parametrize("rate", [0, -1e9, float("inf"), True, "50e9"])
def test_bad_link_rate(rate):
    with pytest.raises(ValueError, match=r"^link_bytes_per_s must be a positive number of bytes/s, got "):
        mk.kv_transfer_seconds(LLAMA_8B.config, 100, rate)


def test_prefill_errors():
    with pytest.raises(ValueError, match=r"^prefill_flops needs a ModelFacts record with param_layout 'llama', got 'deepseek-v2'$"):
        mk.prefill_flops(mk.MODEL_FACTS["deepseek-v2"], 100)
    with pytest.raises(ValueError, match=r"^prefill_flops needs a ModelFacts record with param_layout 'llama', got 'llama-3-8b'$"):
        mk.prefill_flops(LLAMA_8B.config, 100)  # the shape alone has no feed-forward width
    with pytest.raises(ValueError, match=r"^prompt_tokens must be a positive integer, got 0$"):
        mk.prefill_flops(LLAMA_8B, 0)
    with pytest.raises(ValueError, match=r"^flop_rate must be a positive number of FLOP/s, got -1$"):
        mk.prefill_seconds(LLAMA_8B, 100, -1)


def test_every_link_and_node_cites_the_bibliography():
    import re
    from pathlib import Path

    keys = set(re.findall(r"^@\w+\{([^,\s]+),", (Path(__file__).resolve().parents[1] / "references.bib")
                          .read_text(encoding="utf-8"), re.M))
    for record in (*mk.LINKS.values(), *mk.NODES.values()):
        assert set(record.cite.split(",")) <= keys, record.name
