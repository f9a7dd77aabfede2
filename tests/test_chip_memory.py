"""CHIP_MEMORY against the vendor pages it was copied from; chips_for_weights by hand."""
import pytest

import mha_kit as mk

GIB = 2**30


def test_records_match_the_vendor_pages():
    rows = {k: (c.memory_bytes, c.bandwidth) for k, c in mk.CHIP_MEMORY.items()}
    # Cloud TPU7x page, comparison table: HBM GiB 95 / 32 / 192, bandwidth GBps 2765 / 1638 / 7380
    assert rows["tpu-v5p"] == (95 * GIB, 2765e9)
    assert rows["tpu-v6e"] == (32 * GIB, 1638e9)
    assert rows["tpu7x"] == (192 * GIB, 7380e9)
    # AWS Neuron architecture guides: Trainium2 96 GiB at 2.9 TB/s, Trainium3 144 GiB at 4.9 TB/s,
    # Trainium/Inferentia2 32 GiB at 820 GB/s
    assert rows["trainium2"] == (96 * GIB, 2.9e12)
    assert rows["trainium3"] == (144 * GIB, 4.9e12)
    assert rows["inferentia2"] == (32 * GIB, 820e9)
    assert rows["l40s"] == (48 * 10**9, 864e9) and mk.CHIP_MEMORY["l40s"].kind == "GDDR6"


def test_chips_for_weights_by_hand():
    w = 141 * 10**9  # Llama 3 70B in bf16, rounded
    assert mk.chips_for_weights(w, 192 * GIB) == 1  # 0.7 * 206 GB = 144 GB >= 141 GB
    assert mk.chips_for_weights(w, 32 * GIB) == 8  # 141 / (0.7 * 34.4) = 5.9 -> 6 -> 8
    assert mk.chips_for_weights(w, 80 * 10**9) == 4  # 141 / 56 = 2.5 -> 3 -> 4
    assert mk.chips_for_weights(w, 96 * GIB) == 2  # 141 / 72.2 = 1.95 -> 2
    assert mk.chips_for_weights(10, 100, weight_share=0.1) == 1


def test_chips_for_weights_errors():
    with pytest.raises(ValueError, match="weight_bytes > 0"):
        mk.chips_for_weights(0, 1)
    with pytest.raises(ValueError, match="0 < weight_share <= 1"):
        mk.chips_for_weights(1, 1, weight_share=0)
