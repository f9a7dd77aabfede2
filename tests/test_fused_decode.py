"""The fused decode kernel (benchmarks/fused_decode.py) equals mha_kit's reference on every shape.

Tiny shapes keep numba's one compilation (cached in benchmarks/__pycache__) the only cost. Where
numba is not installed these tests are skipped with its reason; the last test proves that path.
"""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import mha_kit as mk

from benchmarks import fused_decode as fd
from benchmarks import numpy_decode as nd

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

needs_numba = pytest.mark.skipif(fd.MISSING is not None, reason=f"fused kernel not tested: {fd.MISSING}")
TOL32 = dict(rtol=2e-5, atol=2e-6)


def caches(h, h_kv, s, d_h, d_v, seed, layout="token"):
    """float32 ``q`` (h, d_h) and caches (h_kv, s, d) stored in ``layout``."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((h, d_h), dtype=np.float32)
    k, v = rng.standard_normal((h_kv, s, d_h), dtype=np.float32), rng.standard_normal((h_kv, s, d_v), dtype=np.float32)
    return q, nd.store_cache(k, layout), nd.store_cache(v, layout)


def reference(q, k, v):
    """mha_kit's decode step in float64."""
    return mk.decode_attention(*(np.asarray(a, dtype=np.float64) for a in (q, k, v)))


@needs_numba
@pytest.mark.parametrize("h, h_kv, s, d_v", [
    (8, 8, 37, 8),  # MHA: g = 1, the single-row paths; a ragged last block
    (8, 2, 40, 8),  # GQA, g = 4: two row pairs
    (6, 2, 19, 5),  # g = 3: a pair and an odd row; d_v != d_h
    (8, 1, 300, 8),  # MQA: one KV head, the context split across slices
    (4, 4, 1, 8),  # a single cached token
])
@pytest.mark.parametrize("layout", sorted(nd.CACHE_LAYOUTS))  # a dim-major cache is read through a copy
@pytest.mark.parametrize("threads, splits", [(1, 1), (2, None), (2, 3)])
def test_fused_equals_reference(h, h_kv, s, d_v, layout, threads, splits):
    q, k, v = caches(h, h_kv, s, 8, d_v, seed=h * 100 + s, layout=layout)
    out = fd.fused_decode_attention(q, k, v, num_threads=threads, num_splits=splits)
    assert out.shape == (h, d_v) and out.dtype == np.float32
    np.testing.assert_allclose(out, reference(q, k, v), **TOL32)


@needs_numba
def test_fused_reads_the_first_length_tokens_of_an_allocation():
    """As KVCache holds it: allocated for max_len tokens, the first `length` filled."""
    q, k, v = caches(8, 2, 50, 8, 8, seed=3)
    out = fd.fused_decode_attention(q, k, v, length=33, num_splits=2)
    np.testing.assert_allclose(out, reference(q, k[:, :33], v[:, :33]), **TOL32)


@needs_numba
def test_fused_mla_reads_values_from_the_keys_rows():
    """MLA's cache: keys [c_KV, k_rope], values the view of their first d_c columns, read once."""
    rng = np.random.default_rng(8)
    kv = rng.standard_normal((1, 70, 12 + 4), dtype=np.float32)  # (1, s, d_c + d_rope)
    q = rng.standard_normal((4, 16), dtype=np.float32)
    assert fd._is_key_prefix(kv[..., :12], kv) and not fd._is_key_prefix(np.ascontiguousarray(kv[..., :12]), kv)
    out = fd.fused_decode_attention(q, kv, kv[..., :12], length=64)
    np.testing.assert_allclose(out, mk.latent_decode_attention(q.astype(float), kv[:, :64].astype(float), 12), **TOL32)


@needs_numba
def test_online_softmax_survives_scores_hundreds_apart():
    """Blocks whose maxima differ by hundreds: exp would overflow without the running rescaling."""
    q = np.full((2, 1), 30.0, dtype=np.float32)
    k = np.linspace(-20, 20, 40, dtype=np.float32).reshape(1, 40, 1)  # scores -600 .. 600, rising
    v = np.arange(40, dtype=np.float32).reshape(1, 40, 1)
    out = fd.fused_decode_attention(q, k, v, num_splits=3)
    np.testing.assert_allclose(out, reference(q, k, v), **TOL32)


@needs_numba
def test_fused_errors():
    q, k = np.ones((4, 2), dtype=np.float32), np.ones((2, 5, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"^length must be between 1 and the cache's 5 tokens, got 6$"):
        fd.fused_decode_attention(q, k, k, length=6)
    with pytest.raises(ValueError, match=r"^num_heads \(4\) must be divisible by num_kv_heads \(3\)$"):
        fd.fused_decode_attention(q, np.ones((3, 5, 2)), np.ones((3, 5, 2)))
    k[1, 3, 0] = np.nan
    with pytest.raises(ValueError, match=r"^softmax input contains NaN or \+inf$"):
        fd.fused_decode_attention(q, k, np.ones((2, 5, 2), dtype=np.float32))


@needs_numba
@pytest.mark.parametrize("threads", [1, 2])
def test_stream_read_sums_every_number(threads):
    """The fused kernel's streaming read (one of the read-bandwidth roof's candidates) reads all of it."""
    x = np.arange(64 * 50, dtype=np.float32) % 7  # small integers: the float32 sum is exact
    assert fd.stream_read(x, num_threads=threads) == float(x.astype(np.float64).sum())
    with pytest.raises(ValueError, match=r"^the array's 100 numbers must split into 64 equal chunks$"):
        fd.stream_read(np.ones(100, dtype=np.float32))


def test_default_splits_give_every_thread_two_slices():
    assert fd.default_splits(h_kv=1, s=32768, threads=2) == 4  # MQA and MLA: the context split in four
    assert fd.default_splits(h_kv=8, s=32768, threads=2) == 1  # GQA-8: the heads suffice
    assert fd.default_splits(h_kv=1, s=300, threads=2) == 1  # no slice below SPLIT_MIN_TOKENS


def test_merge_states_is_the_softmax_over_all_slices():
    """Two slices of one head: the log-sum-exp merge equals one softmax over the four scores."""
    scores, values = np.array([1.0, 3.0, -2.0, 0.5]), np.array([[1.0], [2.0], [3.0], [4.0]])
    row_max = np.array([[[3.0], [0.5]]])  # (h_kv, splits, g): each slice's maximum
    row_sum = np.array([[[np.exp(-2.0) + 1.0], [np.exp(-2.5) + 1.0]]])
    acc = np.array([[[[np.exp(-2.0) * 1 + 2.0]], [[np.exp(-2.5) * 3 + 4.0]]]])
    weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose(fd.merge_states(row_max, row_sum, acc)[0, 0], weights @ values, rtol=1e-12)


def test_without_numba_the_kernel_says_why(monkeypatch):
    """The skip path: numba's import fails, the module still loads, and the kernel says why (as the skip reason does)."""
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` now raises ImportError
    spec = importlib.util.spec_from_file_location("fused_decode_without_numba", BENCHMARKS / "fused_decode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.numba is None and module.MISSING.startswith("numba is not installed (")
    assert module.MISSING.endswith("pip install -r requirements-bench.txt")
    with pytest.raises(RuntimeError, match=r"^numba is not installed \(.*\); pip install -r requirements-bench.txt$"):
        module.fused_decode_attention(np.ones((2, 2)), np.ones((1, 3, 2)), np.ones((1, 3, 2)))
    with pytest.raises(RuntimeError, match=r"^numba is not installed"):
        module.stream_read(np.ones(64, dtype=np.float32))
