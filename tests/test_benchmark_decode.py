"""The NumPy decode path the benchmark times (benchmarks/numpy_decode.py): every block/thread
layout, every kernel and both cache layouts equal mha_kit's reference attention."""
import numpy as np
import pytest

import mha_kit as mk
from benchmarks import numpy_decode as nd

TOL64 = dict(rtol=1e-10, atol=1e-12)
TOL32 = dict(rtol=2e-5, atol=1e-6)

LAYOUTS = [
    dict(),  # defaults: one thread for a small cache, one block per KV head
    dict(num_threads=1, block_len=3),  # blocks merged by the running softmax, no threads
    dict(num_threads=2, block_len=4),  # blocks dealt to two threads
    dict(num_threads=3, block_len=1),  # one token per block, more threads than some runs need
    dict(num_threads=2),  # default block length on two threads: MQA splits the context in two
    dict(kernel="keys_first", num_threads=1, block_len=3),  # scores as k @ q.T, merged blocks
    dict(kernel="keys_first", num_threads=2),  # the same, dealt to two threads
    dict(kernel="batched", num_threads=1),  # every KV head in one stacked product
    dict(kernel="batched", num_threads=3),  # runs of heads per thread; MQA: context slices
    dict(kernel="batched", num_threads=2, block_len=5),  # runs of heads and token slices at once
    dict(kernel="auto", num_threads=2),  # whichever the timing picks: must not matter
]


def reference(q, k, v):
    """grouped_attention for one query token: (h, d_h) -> (h, d_v)."""
    return mk.grouped_attention(q[:, None, :], k, v)[0][:, 0, :]


@pytest.mark.parametrize("h, h_kv", [
    (8, 8),  # MHA
    (8, 2),  # GQA, g = 4
    (8, 1),  # MQA: one KV head, so only the context can be split
    (6, 3),  # g = 2, heads not a power of two
])
@pytest.mark.parametrize("s", [1, 7, 32])  # one token, a ragged last block, whole blocks
@pytest.mark.parametrize("layout", LAYOUTS)
def test_decode_attention_equals_grouped_attention(h, h_kv, s, layout):
    rng = np.random.default_rng(h * 100 + h_kv * 10 + s)
    q = rng.standard_normal((h, 4))
    k, v = rng.standard_normal((h_kv, s, 4)), rng.standard_normal((h_kv, s, 5))  # d_v may differ from d_h
    out = nd.decode_attention(q, k, v, **layout)
    assert out.shape == (h, 5) and out.dtype == np.float64
    np.testing.assert_allclose(out, reference(q, k, v), **TOL64)


@pytest.mark.parametrize("h, h_kv", [(8, 8), (8, 2), (8, 1)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_decode_attention_on_a_dim_major_cache(h, h_kv, layout):
    """The same cache stored dim-major (a transposed view, sliced as the benchmark slices it) gives the same output."""
    rng = np.random.default_rng(h * 10 + h_kv)
    q = rng.standard_normal((h, 4))
    k, v = rng.standard_normal((h_kv, 30, 4)), rng.standard_normal((h_kv, 30, 5))
    k_dim, v_dim = nd.store_cache(k, "dim"), nd.store_cache(v, "dim")
    assert not k_dim.flags.c_contiguous and k_dim.base.flags.c_contiguous and k_dim.base.shape == (h_kv, 4, 30)
    out = nd.decode_attention(q, k_dim[:, :23], v_dim[:, :23], **layout)
    np.testing.assert_allclose(out, reference(q, k[:, :23], v[:, :23]), **TOL64)


def test_store_cache_keeps_values_and_rejects_bad_input():
    x = np.arange(24.0).reshape(2, 3, 4)
    for layout in nd.CACHE_LAYOUTS:
        stored = nd.store_cache(x, layout)
        assert stored.shape == x.shape and (stored == x).all()
        # dim-major: consecutive tokens of one number are neighbours in memory; token-major: the numbers of a token
        assert stored.strides[1 if layout == "dim" else 2] == stored.itemsize
    with pytest.raises(ValueError, match=r"^layout must be one of \['dim', 'token'\], got 'rows'$"):
        nd.store_cache(x, "rows")
    with pytest.raises(ValueError, match=r"^expected a cache of shape \(h_kv, s, d\), got \(3, 4\)$"):
        nd.store_cache(x[0], "dim")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_decode_attention_float32_stays_float32(layout):
    rng = np.random.default_rng(5)
    q = rng.standard_normal((16, 8), dtype=np.float32)
    k, v = (rng.standard_normal((2, 40, 8), dtype=np.float32) for _ in "kv")
    out = nd.decode_attention(q, k, v, **layout)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, reference(q.astype(float), k.astype(float), v.astype(float)), **TOL32)


def test_running_softmax_survives_large_scores():
    """Blocks whose maxima differ by hundreds: exp would overflow without the rescaling."""
    q = np.full((2, 1), 30.0)
    k = np.array([[[-20.0], [0.0], [20.0], [19.0]]])  # scores -600 .. 600 over 4 blocks
    v = np.arange(4.0).reshape(1, 4, 1)
    out = nd.decode_attention(q, k, v, num_threads=2, block_len=1)
    np.testing.assert_allclose(out, reference(q, k, v), **TOL64)
    assert np.isfinite(out).all()


def test_cache_views_with_capacity_to_spare():
    """The benchmark passes views k[:, :s] of a larger cache, as KVCache.keys does."""
    rng = np.random.default_rng(3)
    store = rng.standard_normal((2, 50, 4))
    q = rng.standard_normal((4, 4))
    out = nd.decode_attention(q, store[:, :20], store[:, :20], num_threads=2, block_len=6)
    np.testing.assert_allclose(out, reference(q, store[:, :20].copy(), store[:, :20].copy()), **TOL64)


def test_decode_attention_shape_errors():
    q, k = np.ones((4, 2)), np.ones((2, 5, 2))
    with pytest.raises(ValueError, match=r"^expected k_cache \(h_kv, s, d_h\) and v_cache \(h_kv, s, d_v\) for q \(4, 2\), got \(2, 5, 3\) and \(2, 5, 2\)$"):
        nd.decode_attention(q, np.ones((2, 5, 3)), k)  # head sizes of q and k differ
    with pytest.raises(ValueError, match=r"got \(2, 5, 2\) and \(2, 4, 2\)$"):
        nd.decode_attention(q, k, np.ones((2, 4, 2)))  # k and v hold different numbers of tokens
    with pytest.raises(ValueError, match=r"^k and v must have the same number of heads, got 2 and 1$"):
        nd.decode_attention(q, k, np.ones((1, 5, 2)))
    with pytest.raises(ValueError, match=r"^num_heads \(4\) must be divisible by num_kv_heads \(3\)$"):
        nd.decode_attention(q, np.ones((3, 5, 2)), np.ones((3, 5, 2)))


@pytest.mark.parametrize("env, expected", [
    ({}, 1),  # nothing set: BLAS threads itself, so ours stay out of its way
    ({"OPENBLAS_NUM_THREADS": "1"}, "cores"),
    ({"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "1"}, 1),  # the first variable set wins
    ({"MKL_NUM_THREADS": " 1 "}, "cores"),
    ({"OMP_NUM_THREADS": "2"}, 1),
])
def test_default_threads_follow_the_blas_setting(monkeypatch, env, expected):
    for name in nd._BLAS_THREAD_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(nd.os, "cpu_count", lambda: 6)
    assert nd._default_threads() == (6 if expected == "cores" else expected)


@pytest.mark.parametrize("kernel", sorted(nd.DECODE_KERNELS))
@pytest.mark.parametrize("h_kv, threads, heads, tokens", [
    (8, 2, 4, 16),  # GQA-8 on 2 cores: "batched" gives each thread 4 whole heads
    (1, 2, 1, 8),  # MQA: one head, so "batched" halves the context
    (3, 2, 2, 16),  # 3 heads on 2 threads: runs of 2 and 1
])
def test_layout_of_each_kernel(kernel, h_kv, threads, heads, tokens):
    got = nd._layout(kernel, 16, 4, h_kv, threads)
    if kernel == "batched":
        assert got == (heads, tokens)
    else:  # one head per block, the default block length
        assert got == (1, nd._default_block_len(16, 4, h_kv, threads))


def test_choose_decode_kernel_reports_every_candidate_and_picks_the_fastest():
    rng = np.random.default_rng(11)
    q, k, v = rng.standard_normal((8, 4)), rng.standard_normal((2, 40, 4)), rng.standard_normal((2, 40, 4))
    choice = nd.choose_decode_kernel(q, k, v, num_threads=2, repeats=1)
    expected = {f"{kernel}/{length or 'default'}" for kernel, length in nd.decode_candidates(40, 4, 4)}
    assert set(choice["seconds"]) == expected
    assert choice["seconds"][f"{choice['kernel']}/{choice['block_len'] or 'default'}"] == min(choice["seconds"].values())
    out = nd.decode_attention(q, k, v, num_threads=2, kernel=choice["kernel"], block_len=choice["block_len"])
    np.testing.assert_allclose(out, reference(q, k, v), **TOL64)


def test_decode_candidates_cache_length():
    """Block kernels are also tried with 256 KiB of float32 keys per block: 512 tokens of 128."""
    assert ("blocks", 512) in nd.decode_candidates(32768, 8, 128)
    assert ("batched", 512) in nd.decode_candidates(32768, 8, 128)  # runs of heads cut into such blocks
    assert ("keys_first", 7) in nd.decode_candidates(7, 8, 128)  # never longer than the cache
    assert {kernel for kernel, _ in nd.decode_candidates(10, 1, 4)} == set(nd.DECODE_KERNELS)


def test_unknown_kernel_and_repeats_raise():
    q, k = np.ones((4, 2)), np.ones((2, 5, 2))
    with pytest.raises(ValueError, match=r"^kernel must be one of \['batched', 'blocks', 'keys_first', 'auto'\], got 'fast'$"):
        nd.decode_attention(q, k, k, kernel="fast")
    with pytest.raises(ValueError, match=r"repeats"):
        nd.choose_decode_kernel(q, k, k, repeats=0)


def test_default_block_len_gives_every_thread_a_block():
    assert nd._default_block_len(s=32768, g=64, h_kv=1, threads=2) == 2048  # scores fit in L2
    assert nd._default_block_len(s=1000, g=64, h_kv=1, threads=2) == 500  # two context slices
    assert nd._default_block_len(s=1000, g=1, h_kv=64, threads=2) == 1000  # heads suffice
    assert nd._default_block_len(s=1, g=64, h_kv=1, threads=4) == 1


# ---------------------------------------------------------------------------------------------
# MLA: the absorbed decode step as the benchmark runs it, multi-query attention over the latents
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_latent_decode_through_the_numpy_path(layout):
    """The benchmark's MLA step: keys [c_KV, k_rope] and values a view of their first d_c columns."""
    rng = np.random.default_rng(8)
    kv = rng.standard_normal((1, 11, 8 + 4))  # (1, s, d_c + d_rope)
    q = rng.standard_normal((4, 12))
    out = nd.decode_attention(q, kv, kv[..., :8], **layout)
    assert out.shape == (4, 8)
    np.testing.assert_allclose(out, mk.latent_decode_attention(q, kv, 8), **TOL64)
    np.testing.assert_allclose(out, reference(q, kv, kv[..., :8]), **TOL64)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_in_the_cache_raises_like_softmax(layout):
    k = np.ones((2, 9, 4))
    k[1, 7, 0] = np.nan
    with pytest.raises(ValueError, match=r"^softmax input contains NaN or \+inf$"):
        nd.decode_attention(np.ones((4, 4)), k, np.ones((2, 9, 4)), **layout)
