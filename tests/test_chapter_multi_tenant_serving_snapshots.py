"""Snapshot sizes in multi_tenant_serving-snapshots, worked by hand."""
import mha_kit as mk


def test_awake_snapshot_holds_the_kv_pool():
    pool = 8 * 80e9 * 0.9  # eight H100s, vLLM's default gpu_memory_utilization
    assert pool == 576e9
    assert mk.NODES["dgx-h100"].num_gpus * mk.GPUS["h100-sxm"].hbm_bytes * 0.9 == pool


def test_slept_snapshot_holds_the_weights_once():
    weights = 2 * mk.model_params(mk.MODEL_FACTS["llama-3-70b"])  # bf16
    assert round(weights / 1e9, 1) == 141.1
    assert weights < 576e9 / 4
