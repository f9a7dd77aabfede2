"""The PCIe-card section of "Plan a deployment" (deployment_plan-pcie-cards): L40S replicas, floors and
all-reduce times, recomputed from the L40S datasheet's figures and the models' shapes written out."""
import math

L40S_BYTES, L40S_BW = 48e9, 864e9  # L40S datasheet: 48 GB GDDR6, 864 GB/s
PCIE4_EACH_WAY = 64e9 / 2  # PCIe Gen4 x16: 64 GB/s counted both ways
H100_BW = 3.35e12  # H100 SXM HBM3
P8, P70 = 8_030_261_248, 70_553_706_496  # Llama 3 8B and 70B parameters, embeddings and head included


def cards(weight_bytes, memory_bytes):
    n = math.ceil(weight_bytes / (0.7 * memory_bytes))  # weights at most 70% of each card
    return 2 ** math.ceil(math.log2(n))  # a power of two


def test_card_counts():
    assert cards(2 * P8, L40S_BYTES) == 1  # 16.1 GB < 33.6 GB
    assert cards(2 * P70, L40S_BYTES) == 8  # 141.1 / 33.6 = 4.2 -> 5 -> 8
    assert 4.25 == 4 + (16 + 16) / 128  # int4 codes, fp16 scale and zero per 128 weights
    assert cards(P70 * 4.25 / 8, L40S_BYTES) == 2  # 37.5 / 33.6 = 1.1 -> 2


def test_floors_and_bandwidth_ratio():
    assert round(1e3 * 2 * P8 / L40S_BW, 1) == 18.6
    assert round(1e3 * P70 * 4.25 / 8 / (2 * L40S_BW), 1) == 21.7
    assert f"{H100_BW / L40S_BW:.1f}" == "3.9"


def test_all_reduce_times_at_batch_32():
    # Llama 3 70B: 80 layers, d = 8192; two ring all-reduces per layer, each GPU sends 2 (t-1)/t of 32 x d bf16 values
    def step_bytes(t):
        return 2 * 80 * 2 * (t - 1) * (32 * 8192 // t) * 2

    assert step_bytes(2) == 83_886_080 and step_bytes(8) == 146_800_640
    assert round(1e3 * step_bytes(2) / PCIE4_EACH_WAY, 1) == 2.6
    assert round(1e3 * step_bytes(8) / PCIE4_EACH_WAY, 1) == 4.6
    assert 1e3 * step_bytes(8) / 450e9 < 1.0  # NVLink 4, 450 GB/s each way: a fraction of a millisecond
