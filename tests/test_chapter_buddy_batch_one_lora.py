"""Claims of the buddy-allocator, batch-one quantization and quantized-base LoRA sections, recomputed independently of the notebooks.

kv_cache_basics-buddy, weight_quantization-batch-one, multi_tenant_serving-lora-quantized-base.
"""
import numpy as np

MiB = 2**20


def _next_pow2_multiple(n, unit=512):
    return unit << max(0, int(np.ceil(np.log2(-(-n // unit)))))


def test_buddy_waste_on_tensor_sizes():
    # a request just above a power of two wastes almost half of its block
    assert _next_pow2_multiple(MiB + 512) == 2 * MiB
    assert _next_pow2_multiple(3 * 1000 * 4096 * 2) == 32 * MiB  # 23.4 MiB -> 32 MiB
    assert _next_pow2_multiple(4096 * 14336 * 2) == 128 * MiB  # 112 MiB -> 128 MiB
    assert _next_pow2_multiple(1000 * MiB) == 1024 * MiB


def test_buddy_xor_and_parent():
    # Linux mm/internal.h: B2 = B1 ^ (1 << O), P = B & ~(1 << O); in bytes at order 2 MiB
    offset, size = 6 * MiB, 2 * MiB
    assert offset ^ size == 4 * MiB and (offset & ~size) == 4 * MiB
    assert (4 * MiB) ^ size == 6 * MiB  # buddies are symmetric


def test_int32_accumulation_is_order_free():
    # INT8 products summed in int32: any split of K (any tile) gives the same integers
    rng = np.random.default_rng(0)
    a = rng.integers(-127, 128, size=(1, 8192), dtype=np.int64)
    b = rng.integers(-127, 128, size=(8192, 16), dtype=np.int64)
    whole = a @ b
    tiled = sum(a[:, k:k + 256] @ b[k:k + 256] for k in range(0, 8192, 256))
    assert np.array_equal(whole, tiled)
    assert 8192 * 127 * 127 < 2**31  # no int32 overflow at K = 8192


def _fake_int8(x, scale):
    return np.clip(np.round(x / scale), -127, 127) * scale


def test_per_tensor_dynamic_scale_couples_requests():
    rng = np.random.default_rng(3)
    req = rng.standard_normal((4, 256))
    others = rng.standard_normal((28, 256))
    others[5, 17] = 60.0
    batch = np.vstack([req, others])

    def err(x, ref):
        return np.sqrt(np.mean((x - ref) ** 2) / np.mean(ref**2))

    tok_alone = _fake_int8(req, np.abs(req).max(axis=1, keepdims=True) / 127)
    tok_batch = _fake_int8(batch, np.abs(batch).max(axis=1, keepdims=True) / 127)[:4]
    assert np.array_equal(tok_alone, tok_batch)  # per-token: identical codes in any batch
    ten_alone = err(_fake_int8(req, np.abs(req).max() / 127), req)
    ten_batch = err(_fake_int8(batch, np.abs(batch).max() / 127)[:4], req)
    assert ten_batch > 5 * ten_alone  # one outlier elsewhere multiplies the request's error

