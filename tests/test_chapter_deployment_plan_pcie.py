"""The PCIe-card section of "Plan a deployment" (deployment_plan-pcie-cards): L40S replicas, floors and
all-reduce times, recomputed from the L40S datasheet's figures and the models' shapes written out."""
import math

L40S_BYTES, L40S_BW = 48e9, 864e9  # L40S datasheet: 48 GB GDDR6, 864 GB/s
L40S_BF16 = 362e12  # L40S datasheet: dense BF16 tensor-core rate
PCIE4_EACH_WAY = 16e9 * 16 / 8  # PCIe 4.0: 16 GT/s a lane, 16 lanes, 8 bits a byte
NVLINK4_EACH_WAY = 900e9 / 2  # H100 NVLink 4: 900 GB/s counted both ways
H100_BW, H100_BF16 = 3.35e12, 989e12  # H100 SXM: HBM3 and dense bf16 tensor rate
P8, P70 = 8_030_261_248, 70_553_706_496  # Llama 3 8B and 70B parameters, embeddings and head included
EMB_HEAD70 = 2 * 128_256 * 8_192  # Llama 3 70B's embedding table and untied output head (vocab x d each)
W4_70 = (P70 - EMB_HEAD70) * 4.25 / 8 + EMB_HEAD70 * 2  # 4.25-bit layers, bf16 embedding and head


def cards(weight_bytes, memory_bytes):
    n = math.ceil(weight_bytes / (0.7 * memory_bytes))  # weights at most 70% of each card
    return 2 ** math.ceil(math.log2(n))  # a power of two


def test_card_counts():
    assert cards(2 * P8, L40S_BYTES) == 1  # 16.1 GB < 33.6 GB
    assert cards(2 * P70, L40S_BYTES) == 8  # 141.1 / 33.6 = 4.2 -> 5 -> 8
    assert 4.25 == 4 + (16 + 16) / 128  # int4 codes, fp16 scale and zero per 128 weights
    assert round(W4_70 / 1e9, 1) == 40.6
    assert round(EMB_HEAD70 * (2 - 4.25 / 8) / 1e9, 1) == 3.1  # what the 16-bit embedding and head add
    assert cards(W4_70, L40S_BYTES) == 2  # 40.6 / 33.6 = 1.2 -> 2
    assert cards(W4_70, 80e9) == 1  # one H100


def test_floors_and_bandwidth_ratio():
    assert round(1e3 * 2 * P8 / L40S_BW, 1) == 18.6
    assert round(1e3 * W4_70 / (2 * L40S_BW), 1) == 23.5
    assert round(1e3 * W4_70 / H100_BW, 1) == 12.1
    assert f"{H100_BW / L40S_BW:.1f}" == "3.9"
    assert f"{H100_BF16 / L40S_BF16:.1f}" == "2.7"


def test_all_reduce_times_at_batch_32():
    # Llama 3 70B: 80 layers, d = 8192; two ring all-reduces per layer, each GPU sends 2 (t-1)/t of 32 x d bf16 values
    def step_bytes(t):
        return 2 * 80 * 2 * (t - 1) * (32 * 8192 // t) * 2

    assert PCIE4_EACH_WAY == 32e9
    assert step_bytes(2) == 83_886_080 and step_bytes(8) == 146_800_640
    assert round(1e3 * step_bytes(2) / PCIE4_EACH_WAY, 1) == 2.6
    assert round(1e3 * step_bytes(8) / PCIE4_EACH_WAY, 1) == 4.6
    assert round(1e3 * step_bytes(8) / NVLINK4_EACH_WAY, 2) == 0.33
    assert round(1e3 * step_bytes(2) / NVLINK4_EACH_WAY, 2) == 0.19


def test_pipeline_split_of_70b_bf16():
    n = math.ceil(2 * P70 / (0.7 * L40S_BYTES))  # split by layers: no power of two
    assert n == 5 and 80 % n == 0  # 16 layers a card
    boundary_bytes = (n - 1) * 32 * 8192 * 2  # one bf16 (32, d) activation per stage boundary
    assert f"{1e3 * boundary_bytes / PCIE4_EACH_WAY:.2f}" == "0.07"
    assert round(1e3 * 2 * P70 / L40S_BW) == 163  # a token passes all stages: the whole read at one card's rate
