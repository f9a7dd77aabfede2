"""Time one decode step of attention over a KV cache and compare it with this machine's limits.

One layer, one new token, 64 query heads, float32 on the CPU, for four variants of that layer:
MHA, GQA-8, MQA (Llama 3 70B's heads of 128 with 64, 8 and 1 KV heads) and MLA (DeepSeek-V2's
latent, absorbed form), through three paths on the same caches:

* ``numpy``: the readable baseline, NumPy's BLAS on blocks (``numpy_decode.py``), with the
  formulation and the cache layout (token- or dim-major) chosen by timing per variant and context;
* ``fused``: one pass over the cache per KV head in a numba kernel (``fused_decode.py``), where
  numba is installed (``requirements-bench.txt``);
* ``torch``: the peer, PyTorch's ``scaled_dot_product_attention`` with ``enable_gqa=True``, where
  PyTorch is installed (``peer.py``); every kernel is also reported as a ratio to it.

Each step is judged against two roofs measured in the same run, round by round beside the steps:

* classic: a STREAM-style copy (reads and writes) and a large square float32 GEMM;
* achievable: a read-only stream (what reading a KV cache needs), the best of several streaming
  reads (NumPy's sums, BLAS's matrix-vector products, the fused kernel's own loop), and the rate of
  the step's own products on a block in cache, by the faster of BLAS and the fused kernel.

A roof is an upper bound, so each roof is the best of its rounds (and of its kernels), printed with
its spread; the steps are read on their medians. The last line gives each path's fraction of its
achievable roof and what bounds that roof (bytes or products), not a pass or a fail. A step faster
than its roof means the roof was measured low: the report then says so instead.

    python -m benchmarks.decode_benchmark                 # full run, a few minutes on 2 quiet cores
    python -m benchmarks.decode_benchmark --quick         # small contexts, five rounds
    python -m benchmarks.decode_benchmark --out benchmarks/results_reference   # the book's copy

(from the repository's root, which ``python -m`` puts on the import path: mha_kit need not be installed).

Writes ``decode_benchmark.csv``, ``machine.json`` and ``report.txt`` (what it printed) to ``--out``
(default benchmarks/results/). Book: chapter "Measure it yourself".
"""
from __future__ import annotations

import os

# BLAS must run one thread per call so that the NumPy path's own threads get the cores (see
# numpy_decode._default_threads); this has to happen before NumPy is imported. The variables the
# host had set are recorded before (host.blas_record), and none that it set is changed.
INHERITED_VARIABLES = dict(os.environ)
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import mha_kit as mk  # noqa: E402
from benchmarks import fused_decode as fd  # noqa: E402
from benchmarks import host, peer  # noqa: E402
from benchmarks import numpy_decode as nd  # noqa: E402
from mha_kit import roofline  # noqa: E402

FULL_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
QUICK_CONTEXTS = (256, 512)
MIN_REPEATS = 5  # every figure is the median of at least this many rounds
REPORT_CONTEXT = 32768  # the context whose fractions of the roofs the last line reports
BOUND_NAMES = {"memory": "bytes", "compute": "products"}  # what sets an achievable roof, as the report says it
PATHS = ("numpy", "fused", "torch")  # the baseline, the fused kernel, the peer
PEER_SKIPS_MLA = ("MLA: no peer row; with values narrower than keys, sdpa falls back to its math kernel, which "
                  "copies the one latent head to all 64 query heads (9 GB at 32K tokens)")
FUSED_CACHE_BYTES = 2 << 20  # the fused kernel's products "in cache": a cache of about 2 MiB, read again and again
FIT_FROM = 8192  # contexts used for the linear fit of time against bytes
READ_PREFIX = "read_bandwidth "  # the streaming reads measured each round; the roof is their best
READ_ROW = 1024  # numbers per row of the matrix-vector read
PRODUCT_FLOPS = 1 << 26  # FLOPs per thread in one timing of a variant's isolated products
PRODUCT_TOKENS = 4096  # longest block the products are timed on: 2 MiB of float32 keys of 128
COLUMNS = ("context", "variant", "path", "kernel", "layout", "kv_bytes", "macs", "median_s", "spread", "gb_per_s",
           "gflop_per_s", "bound_s", "limited_by", "roofline_fraction", "achievable_s",
           "achievable_limited_by", "achievable_fraction", "read_fraction", "speedup_vs_mha", "vs_torch")


def run_times(func, repeats, warmup):
    """Wall times of ``repeats`` runs of ``func()``, after ``warmup`` untimed runs."""
    for _ in range(warmup):
        func()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times


def spread(values):
    """Interquartile range over the median: 0.05 means the middle half lies within 5% of it."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return float((q3 - q1) / median) if median else 0.0


def on_threads(pool, funcs):
    """Run every function at once, one per thread, and wait for all."""
    return list(pool.map(lambda f: f(), funcs))


def _thread_slices(size, threads):
    """``threads`` contiguous (start, stop) ranges covering ``range(size)``."""
    return [(i * size // threads, (i + 1) * size // threads) for i in range(threads)]


def copy_stream(pool, threads, nbytes):
    """One STREAM-style copy over all threads; returns bytes/s counting one read and one write."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    copies = [lambda a=a, b=b: np.copyto(dst[a:b], src[a:b]) for a, b in _thread_slices(src.size, threads)]
    return lambda: 2 * src.nbytes / run_times(lambda: on_threads(pool, copies), 1, 0)[0]


def read_stream(pool, threads, nbytes):
    """One read-only pass (a sum per thread) over ``nbytes``; returns bytes/s. Decode only reads."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    sums = [lambda a=a, b=b: src[a:b].sum() for a, b in _thread_slices(src.size, threads)]
    return lambda: src.nbytes / run_times(lambda: on_threads(pool, sums), 1, 0)[0]


def read_gemv(pool, threads, nbytes):
    """One read-only pass as BLAS matrix-vector products, (rows, 1024) @ (1024,) per thread; bytes/s."""
    src = np.ones((nbytes // 4 // READ_ROW, READ_ROW), dtype=np.float32)  # (rows, 1024)
    ones = np.ones(READ_ROW, dtype=np.float32)
    products = [lambda a=a, b=b: src[a:b] @ ones for a, b in _thread_slices(src.shape[0], threads)]
    return lambda: src.nbytes / run_times(lambda: on_threads(pool, products), 1, 0)[0]


def read_fused(threads, nbytes):
    """One read-only pass by the fused kernel's own streaming loop (numba threads); bytes/s."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    fd.stream_read(src, num_threads=threads)  # compiled before the first timing
    return lambda: src.nbytes / run_times(lambda: fd.stream_read(src, num_threads=threads), 1, 0)[0]


def read_probes(pool, threads, nbytes):
    """The streaming reads whose best round is the read-bandwidth roof: NumPy sums, BLAS gemv, fused (with numba)."""
    probes = {f"{READ_PREFIX}sum": read_stream(pool, threads, nbytes), f"{READ_PREFIX}gemv": read_gemv(pool, threads, nbytes)}
    if not fd.MISSING:
        probes[f"{READ_PREFIX}fused"] = read_fused(threads, nbytes)
    return probes


def with_read_roof(rates):
    """``rates`` plus ``read_bandwidth``: in each round, the fastest of the streaming reads.

    A roof is an upper bound only if it is the best of kernels that read as fast as the machine can,
    so the read-bandwidth roof is the best of several reads, not of one formulation of it.
    """
    readers = [values for name, values in rates.items() if name.startswith(READ_PREFIX)]
    if not readers:
        return dict(rates)
    return dict(rates) | {"read_bandwidth": [max(round_) for round_ in zip(*readers)]}


def gemm_rate(pool, threads, size):
    """One float32 (size, size) @ (size, size), rows split over the threads; returns FLOP/s."""
    rng = np.random.default_rng(0)
    a, b = rng.random((size, size), dtype=np.float32), rng.random((size, size), dtype=np.float32)
    products = [lambda r0=r0, r1=r1: a[r0:r1] @ b for r0, r1 in _thread_slices(size, threads)]
    return lambda: 2 * size**3 / run_times(lambda: on_threads(pool, products), 1, 0)[0]


def product_rate(pool, threads, cfg, choice):
    """The decode step's own products, q.K^T and p.V, in isolation; returns FLOP/s over all threads.

    Each thread multiplies one KV head's ``g`` queries by one block of keys and values of the
    length the chosen kernel uses (``choice``: ``kernel``, ``block_len`` and ``layout`` chosen at
    the largest context), stored in the chosen layout, at most ``PRODUCT_TOKENS`` so that
    the block stays in the CPU's caches, the same block again and again: only the products' own
    speed counts, not the memory's. ``"keys_first"`` runs them as that kernel does (k @ q.T, then
    p.T @ v); MLA's values are a view of its keys, as in its cache.
    """
    g, d_k, d_v = _decode_dims(cfg)
    tokens = min(choice["block_len"] or PRODUCT_TOKENS, PRODUCT_TOKENS)
    rng = np.random.default_rng(1)
    blocks = [(rng.random((g, d_k), dtype=np.float32),
               nd.store_cache(rng.random((1, tokens, d_k), dtype=np.float32), choice["layout"])[0])
              for _ in range(threads)]  # each thread its own block, stored in the chosen layout
    flops = 2 * g * tokens * (d_k + d_v)
    reps = max(1, PRODUCT_FLOPS // flops)

    def products(q, k):
        v = k[:, :d_v] if cfg.variant == "mla" else k  # values: as many numbers as keys, or MLA's view
        for _ in range(reps):
            product_pair(choice["kernel"], q, k, v)
    calls = [lambda block=block: products(*block) for block in blocks]
    return lambda: threads * reps * flops / run_times(lambda: on_threads(pool, calls), 1, 0)[0]


def product_pair(kernel, q, k, v):
    """The decode step's two products for one KV head and block, in the order ``kernel`` runs them."""
    if kernel == "keys_first":
        return (k @ q.T).T @ v  # (s_b, d_k) @ (d_k, g) -> (s_b, g); (g, s_b) @ (s_b, d_v) -> (g, d_v)
    return (q @ k.T) @ v  # (g, d_k) @ (d_k, s_b) -> (g, s_b); (g, s_b) @ (s_b, d_v) -> (g, d_v)


def streamed_products(pool, threads, choice, inputs, s, flops):
    """The step's two products alone, over the whole cache of ``s`` tokens as the step reads it; FLOP/s.

    No softmax and no merging: each thread multiplies its share of (KV head, block) pairs, blocks of
    the chosen length (the default: ``PRODUCT_TOKENS``), the cache coming from memory as in the step.
    Beside :func:`product_rate` (the same products on a block in cache) and the read-only stream,
    it says how far this machine overlaps loading the cache with multiplying it: not at all when
    this time is the sum of the other two, fully when it is the larger of them.
    """
    q, k, v = inputs
    h_kv, d_k = k.shape[0], k.shape[-1]
    q_grouped = q.reshape(h_kv, -1, d_k)  # (h_kv, g, d_k): the g query heads of each KV head
    block = choice["block_len"] or PRODUCT_TOKENS
    work = [(j, a, min(a + block, s)) for j in range(h_kv) for a in range(0, s, block)]

    def products(lo, hi):
        for j, a, b in work[lo:hi]:
            product_pair(choice["kernel"], q_grouped[j], k[j, a:b], v[j, a:b])
    calls = [lambda lo=lo, hi=hi: products(lo, hi) for lo, hi in _thread_slices(len(work), threads)]
    return lambda: flops / run_times(lambda: on_threads(pool, calls), 1, 0)[0]


def _decode_dims(cfg):
    """(g, key width, value width) of one KV head in the decode step; MLA: (h, d_c + d_rope, d_c)."""
    if cfg.variant == "mla":
        return cfg.num_heads, cfg.kv_lora_rank + cfg.qk_rope_head_dim, cfg.kv_lora_rank
    return cfg.num_heads // cfg.num_kv_heads, cfg.head_dim, cfg.head_dim


def decode_inputs(cfg, max_context, seed=0, layout="token"):
    """Random float32 ``(q, k, v)`` for one decode step over ``max_context`` tokens, cache in ``layout``.

    MHA, GQA and MQA: ``q`` (h, d_h), ``k`` and ``v`` (h_kv, s, d_h). MLA, absorbed: ``q``
    (h, d_c + d_rope), ``k`` the cached ``[c_KV, k_rope]`` (1, s, d_c + d_rope) and ``v`` its first
    d_c columns, a view: the cache is stored once, as :class:`mha_kit.LatentCache` stores it.
    """
    rng = np.random.default_rng(seed)
    if cfg.variant == "mla":
        kv = nd.store_cache(rng.random((1, max_context, cfg.kv_lora_rank + cfg.qk_rope_head_dim), dtype=np.float32),
                            layout)
        q = rng.standard_normal((cfg.num_heads, kv.shape[-1]), dtype=np.float32)
        return q, kv, kv[..., :cfg.kv_lora_rank]
    k, v = (nd.store_cache(rng.random((cfg.num_kv_heads, max_context, cfg.head_dim), dtype=np.float32), layout)
            for _ in "kv")
    return rng.standard_normal((cfg.num_heads, cfg.head_dim), dtype=np.float32), k, v


def decode_steps(cfg, inputs, s, threads, choice):
    """``{path: step}`` over the first ``s`` tokens: NumPy with its chosen kernel, fused, and the peer.

    ``inputs[layout]`` holds ``(q, k, v)`` in each layout, allocated for the largest context; the
    fused kernel and the peer read the token-major one (``length=s``: the fused kernel reads the
    allocation as :class:`mha_kit.KVCache` holds it). A path whose library is missing is left out.
    """
    (q, k, v), options = inputs[choice["layout"]], {key: choice[key] for key in ("kernel", "block_len")}
    steps = {"numpy": lambda: nd.decode_attention(q, k[:, :s], v[:, :s], num_threads=threads, **options)}
    q_t, k_t, v_t = inputs["token"]
    if not fd.MISSING:
        steps["fused"] = lambda: fd.fused_decode_attention(q_t, k_t, v_t, length=s, num_threads=threads)
    if not peer.MISSING and cfg.variant != "mla":  # see PEER_SKIPS_MLA
        steps["torch"] = peer.sdpa_step(q_t, k_t[:, :s], v_t[:, :s], threads)
    return steps


def fused_product_rate(threads, cfg):
    """The fused kernel's own rate on a cache of about ``FUSED_CACHE_BYTES``, read again and again; FLOP/s.

    The cache stays in the CPU's caches, so only the kernel's arithmetic counts, softmax included:
    the counterpart of :func:`product_rate` for the fused path.
    """
    tokens = max(64, FUSED_CACHE_BYTES // mk.kv_bytes_read(cfg, 1, "fp32"))
    q, k, v = decode_inputs(cfg, tokens, seed=2)
    flops = roofline.decode_flops(cfg, tokens)
    reps = max(1, PRODUCT_FLOPS * threads // flops)

    def products():
        for _ in range(reps):
            fd.fused_decode_attention(q, k, v, num_threads=threads)
    products()  # compiled and in cache before the first timing
    return lambda: reps * flops / run_times(products, 1, 0)[0]


def choose_kernels(variants, inputs, contexts, threads, repeats):
    """``{(variant, s): {"kernel", "block_len", "layout", "seconds"}}``: the fastest of each shape.

    ``inputs[label][layout]`` holds the variant's ``(q, k, v)`` in each cache layout; every layout's
    candidates are timed (:func:`mha_kit.choose_decode_kernel`) and the fastest of all is kept.
    """
    kernels = {}
    for label in variants:
        for s in contexts:
            choices = []
            for layout, (q, k, v) in inputs[label].items():
                choice = nd.choose_decode_kernel(q, k[:, :s], v[:, :s], num_threads=threads, repeats=repeats)
                choices.append(choice | {"layout": layout, "seconds": {f"{key}@{layout}": t for key, t in
                                                                       choice["seconds"].items()}})
            best = min(choices, key=lambda c: c["seconds"][f"{_kernel_name(c)}@{c['layout']}"])
            kernels[(label, s)] = best | {"seconds": {k: t for c in choices for k, t in c["seconds"].items()}}
    return kernels


def measure(probes_for, contexts, repeats, warmup, threads):
    """Choose each shape's NumPy kernel, then time every step of every path and every roof round by round.

    ``probes_for(kernels, inputs)`` returns the roofs to measure, each a function giving its rate
    once (``inputs``: each variant's cache in the layout chosen at the largest context).
    Returns ``(kernels, {(variant, s, path): [seconds]}, {roof: [rate]})``.
    """
    variants = roofline.benchmark_variants()
    inputs = {label: {layout: decode_inputs(cfg, max(contexts), layout=layout) for layout in nd.CACHE_LAYOUTS}
              for label, cfg in variants.items()}
    kernels = choose_kernels(variants, inputs, contexts, threads, 1 if warmup == 0 else MIN_REPEATS)
    chosen = {label: inputs[label][kernels[(label, max(contexts))]["layout"]] for label in variants}
    steps = {(label, s, path): step for label in variants for s in contexts
             for path, step in decode_steps(variants[label], inputs[label], s, threads, kernels[(label, s)]).items()}
    return (kernels, *time_rounds(probes_for(kernels, chosen), steps, repeats, warmup))


def time_rounds(probes, steps, repeats, warmup):
    """``repeats`` rounds after ``warmup``; each takes every roof and every step once.

    So a burst of other work on the machine lands on roofs and steps alike instead of spoiling
    one figure, and no cache stays warm in the CPU's caches between two steps of the same
    variant (as in a model, where the other layers run in between).
    """
    times, rates = {point: [] for point in steps}, {name: [] for name in probes}
    for round_ in range(warmup + repeats):
        for name, probe in probes.items():
            rate = probe()
            rates[name] += [rate] if round_ >= warmup else []
        for point, step in steps.items():
            seconds = run_times(step, 1, 0)
            times[point] += seconds if round_ >= warmup else []
    return times, rates


def roof_probes(pool, threads, quick, kernels, inputs=None, context=None):
    """The roofs measured each round: copy, the streaming reads, GEMM, and each variant's products (BLAS, and fused).

    With ``inputs`` (each variant's cache) and ``context``, also each variant's BLAS products
    streamed over that cache (:func:`streamed_products`), for the overlap line.
    """
    nbytes = (16 if quick else 512) << 20
    probes = {"copy_bandwidth": copy_stream(pool, threads, nbytes), **read_probes(pool, threads, nbytes),
              "gemm_flop_rate": gemm_rate(pool, threads, 256 if quick else 2048)}
    for label, cfg in roofline.benchmark_variants().items():
        probes[f"products {label}"] = product_rate(pool, threads, cfg, kernels[label])  # kernels: label -> choice
        if not fd.MISSING:
            probes[f"fused products {label}"] = fused_product_rate(threads, cfg)
        if inputs is not None:
            flops = 2 * mk.attention_macs(cfg, context)
            probes[f"streamed {label}"] = streamed_products(pool, threads, kernels[label], inputs[label], context, flops)
    return probes


def best_roofs(rates):
    """Each roof's best round: an upper bound, as a roof must be; ``rates``: {roof: [rate per round]}."""
    return {name: float(max(values)) for name, values in rates.items()}


def products_roof(roofs, label):
    """The rate of a variant's own products in cache: the faster of BLAS's and the fused kernel's."""
    return max(roofs[f"products {label}"], roofs.get(f"fused products {label}", 0.0))


def table_rows(times, roofs, kernels, fmt="fp32"):
    """Rows of the table: counts, medians and spread, both roofs' fractions, ratios to MHA and to the peer."""
    variants = roofline.benchmark_variants()
    rows = [table_row(label, variants[label], s, seconds, roofs, fmt) | {"path": path} | _kernel_columns(
        path, kernels[(label, s)]) for (label, s, path), seconds in times.items()]
    medians = {(r["variant"], r["context"], r["path"]): r["median_s"] for r in rows}
    for r in rows:
        r["speedup_vs_mha"] = medians[("MHA", r["context"], r["path"])] / r["median_s"]
        peer_median = medians.get((r["variant"], r["context"], "torch"))
        r["vs_torch"] = peer_median / r["median_s"] if peer_median else ""
    return rows


def _kernel_columns(path, choice):
    """The kernel and layout of a row: the NumPy path's choice, or what the other paths always use."""
    if path == "numpy":
        return {"kernel": _kernel_name(choice), "layout": choice["layout"]}
    return {"kernel": "numba/fused" if path == "fused" else "sdpa/gqa", "layout": "token"}


def _kernel_name(choice):
    """``"blocks/512"``: a kernel and its block length (``default``: the kernel's own)."""
    return f"{choice['kernel']}/{choice['block_len'] or 'default'}"


def table_row(label, cfg, s, seconds, roofs, fmt="fp32"):
    """One measurement against both roofs. ``roofs``: each roof's best rate (bytes/s, FLOP/s) by name."""
    kv_bytes, macs = mk.kv_bytes_read(cfg, s, fmt), mk.attention_macs(cfg, s)
    median = float(np.median(seconds))
    bound = roofline.roofline_seconds(kv_bytes, 2 * macs, roofs["copy_bandwidth"], roofs["gemm_flop_rate"])
    products = products_roof(roofs, label)
    achievable = roofline.roofline_seconds(kv_bytes, 2 * macs, roofs["read_bandwidth"], products)
    return {"context": s, "variant": label, "kv_bytes": kv_bytes, "macs": macs, "median_s": median,
            "spread": spread(seconds), "gb_per_s": kv_bytes / median / 1e9, "gflop_per_s": 2 * macs / median / 1e9,
            "bound_s": bound, "limited_by": roofline.limited_by(cfg, s, roofs["copy_bandwidth"], roofs["gemm_flop_rate"], fmt),
            "roofline_fraction": bound / median, "achievable_s": achievable,
            "achievable_limited_by": "memory" if kv_bytes / roofs["read_bandwidth"] >= 2 * macs / products else "compute",
            "achievable_fraction": achievable / median, "read_fraction": kv_bytes / roofs["read_bandwidth"] / median}


def linear_fit(rows, variant, path="numpy", from_context=FIT_FROM):
    """Fit ``time = t0 + bytes / rate`` over the largest contexts: (rate in bytes/s, R^2), or None."""
    points = [(r["kv_bytes"], r["median_s"]) for r in rows
              if r["variant"] == variant and r["path"] == path and r["context"] >= from_context]
    if len(points) < 2:
        return None
    x, y = np.array(points, dtype=float).T
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (slope * x + intercept)) ** 2) / max(np.sum((y - y.mean()) ** 2), 1e-30)
    return 1 / slope, float(r2)


def summary_lines(rows, context=REPORT_CONTEXT):
    """What each path reached at ``context``: its fraction of its achievable roof and what bounds that roof.

    No pass or fail: a roof is what this machine allows, and a fraction of it says how far a kernel
    is from it and why (bytes or products), not whether it met a number of ours. The last line
    sums them up, or says "roof measured low, rerun" when any step beat its achievable roof, since
    the fractions then mean little.
    """
    low = roof_low_lines(rows)
    at = {(r["variant"], r["path"]): r for r in rows if r["context"] == context}
    if not at:
        return low + [f"fractions of the roofs: not reported (no {context:,}-token run; use the full benchmark)"]
    lines = [peer_line(v, r) for (v, path), r in at.items() if path == "fused" and r["vs_torch"] != ""]
    lines += [read_line(at[("MHA", "numpy")])] if ("MHA", "numpy") in at else []
    lines += [gqa_speedup_line(at, path) for path in PATHS if ("GQA-8", path) in at and ("MHA", path) in at]
    if low:
        return lines + low + [f"roof measured low, rerun: {len(low)} step(s) faster than their achievable roof"]
    return lines + [bounds_line(at, context)]


def bounds_line(at, context):
    """One line: per variant, each path's fraction of its achievable roof, and what sets that roof."""
    parts = []
    for v in roofline.benchmark_variants():
        paths = [(path, at[(v, path)]) for path in PATHS if (v, path) in at]
        if paths:
            bound = BOUND_NAMES[paths[0][1]["achievable_limited_by"]]
            parts.append(f"{v} ({bound}) " + ", ".join(f"{path} {r['achievable_fraction']:.0%}" for path, r in paths))
    return f"at {context:,} tokens, each path's share of its achievable roof (what bounds the roof): " + "; ".join(parts)


def peer_line(variant, r):
    """The fused kernel's speed as a ratio to the peer's, for one variant."""
    return f"INFO  {variant} (fused) at {r['context']:,}: {r['vs_torch']:.2f}x the speed of PyTorch's sdpa"


def read_line(r):
    """MHA on the NumPy path, the variant that only streams, against the read-bandwidth roof alone."""
    return (f"INFO  MHA (numpy) at {r['context']:,}: {r['read_fraction']:.0%} of the read-bandwidth roof's speed "
            "(the best streaming read of the run)")


def roof_low_lines(rows):
    """One line per step whose median beat its achievable roof: the roof was measured low."""
    return [f"ROOF LOW  {r['variant']} ({r['path']}) at {r['context']:,}: {r['achievable_fraction']:.0%} of its "
            f"achievable roof's speed" for r in rows if r["achievable_fraction"] > 1]


def gqa_speedup_line(at, path):
    """GQA-8's speed-up over MHA on one path, beside the byte ratio and what the achievable roofs predict."""
    gqa, mha = at[("GQA-8", path)], at[("MHA", path)]
    why = ("; GQA-8's achievable roof is set by its skinny products, not its bytes"
           if gqa["achievable_limited_by"] == "compute" else "")
    return (f"INFO  GQA-8 over MHA ({path}) at {gqa['context']:,}: {gqa['speedup_vs_mha']:.1f}x faster for "
            f"{mha['kv_bytes'] / gqa['kv_bytes']:.0f}x fewer bytes; the achievable roofs predict "
            f"{mha['achievable_s'] / gqa['achievable_s']:.1f}x{why}")


def overlap_lines(rows, roofs):
    """Per variant and path at the largest context: bytes alone, products in cache, and both streamed.

    NumPy: its BLAS products streamed over the cache without softmax; fused: the fused step itself.
    ``overlap`` is how much of the shorter of the first two the streamed run hid: 0% when its time
    is the sum (load, then multiply), 100% when it is the larger (the roofs' assumption).
    """
    largest = max(r["context"] for r in rows)
    lines = []
    for r in (r for r in rows if r["context"] == largest and r["path"] in ("numpy", "fused")):
        flops, label = 2 * r["macs"], r["variant"]
        if r["path"] == "numpy" and f"streamed {label}" in roofs:
            multiply, both = flops / roofs[f"products {label}"], flops / roofs[f"streamed {label}"]
        elif r["path"] == "fused":
            multiply, both = flops / roofs[f"fused products {label}"], r["median_s"]
        else:
            continue
        load = r["kv_bytes"] / roofs["read_bandwidth"]
        lines.append(f"loads and products, {label} ({r['path']}) at {largest:,}: bytes alone {load * 1e3:.1f} ms, "
                     f"products in cache {multiply * 1e3:.1f} ms, both streamed {both * 1e3:.1f} ms: overlap "
                     f"{roofline.overlap(load, multiply, both):.0%} (step {r['median_s'] * 1e3:.1f} ms)")
    return lines


def format_table(rows):
    """The results as aligned text, one line per (context, variant, path)."""
    head = (f"{'context':>8} {'variant':<6} {'path':<5} {'kernel':<18} {'layout':<6} {'KV read':>8} {'median':>10} "
            f"{'IQR':>4} {'GB/s':>5} {'GFLOP/s':>7} {'classic':>7} {'achievable':>14} {'read':>5} {'vs MHA':>6} "
            f"{'vs torch':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        vs_torch = f"{r['vs_torch']:>7.2f}x" if r["vs_torch"] != "" else f"{'-':>8}"
        lines.append(f"{r['context']:>8,} {r['variant']:<6} {r['path']:<5} {r['kernel']:<18} {r['layout']:<6} "
                     f"{mk.format_bytes(r['kv_bytes']):>8} {r['median_s'] * 1e3:>7.2f} ms {r['spread']:>4.0%} "
                     f"{r['gb_per_s']:>5.1f} {r['gflop_per_s']:>7.1f} {r['roofline_fraction']:>7.0%} "
                     f"{r['achievable_fraction']:>4.0%} {r['achievable_limited_by']:>9} {r['read_fraction']:>5.0%} "
                     f"{r['speedup_vs_mha']:>5.1f}x {vs_torch}")
    return "\n".join(lines)


def write_results(out_dir, rows, machine, report):
    """``decode_benchmark.csv`` (one row per measurement), ``machine.json`` and ``report.txt``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "decode_benchmark.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    (out_dir / "machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    (out_dir / "report.txt").write_text("\n".join(report) + "\n")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", "--smoke", action="store_true", help="small contexts, five rounds: seconds")
    p.add_argument("--contexts", type=int, nargs="+", help="cache lengths s (default 1k .. 32k)")
    p.add_argument("--repeats", type=int, help=f"timed rounds (median), at least {MIN_REPEATS}; default 15, quick 5")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads (default: every core)")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results", help="folder for CSV/JSON")
    args = p.parse_args(argv)
    if args.repeats is not None and args.repeats < MIN_REPEATS:
        p.error(f"--repeats must be at least {MIN_REPEATS} (medians, not luck), got {args.repeats}")
    return args


def main(argv=None):
    args = parse_args(argv)
    contexts = args.contexts or (QUICK_CONTEXTS if args.quick else FULL_CONTEXTS)
    repeats = args.repeats or (MIN_REPEATS if args.quick else 15)
    machine = host.describe(args.threads) | host.blas_record(INHERITED_VARIABLES) | libraries()
    with ThreadPoolExecutor(args.threads) as pool:
        kernels, times, rates = run(pool, args, contexts, repeats)
    rates = with_read_roof(rates)
    roofs = best_roofs(rates)
    machine.update(load_average_end=host.load_average(), rounds=repeats, roofs=roofs,
                   roof_median={name: float(np.median(r)) for name, r in rates.items()},
                   roof_spread={name: spread(r) for name, r in rates.items()},
                   kernels={f"{label}@{s}": choice for (label, s), choice in kernels.items()})
    rows = table_rows(times, roofs, kernels)
    report = report_lines(machine, rows)
    print("\n".join(report))
    write_results(args.out, rows, machine, report)
    print(f"wrote decode_benchmark.csv, machine.json and report.txt to {args.out}")


def libraries():
    """The optional paths' libraries: numba and PyTorch with their versions, or why each is missing."""
    return {"numba": fd.numba.__version__ if fd.numba else None, "fused_missing": fd.MISSING,
            "torch": peer.version(), "peer_missing": peer.MISSING}


def run(pool, args, contexts, repeats):
    """Choose the kernels, then time roofs and steps (see :func:`measure`)."""
    def probes_for(kernels, inputs):
        chosen = {label: kernels[(label, max(contexts))] for label in roofline.benchmark_variants()}
        return roof_probes(pool, args.threads, args.quick, chosen, inputs, max(contexts))
    return measure(probes_for, contexts, repeats, 0 if args.quick else 2, args.threads)


def report_lines(machine, rows):
    """What the run prints: machine and its BLAS, roofs with their spread, the table, fits, overlap, fractions."""
    return (header_lines(machine) + roof_lines(machine) + [format_table(rows)] + fit_lines(rows)
            + overlap_lines(rows, machine["roofs"]) + peer_lines(machine) + summary_lines(rows))


def header_lines(machine):
    """The machine, NumPy's BLAS as loaded, the variables that steer it, warnings, and the load."""
    blas = "; ".join(f"{b['internal_api']} {b['version']} ({b['architecture']}, {b['num_threads']} threads)"
                     for b in machine["blas_libraries"] or []) or "not recorded (threadpoolctl is not installed)"
    variables = ", ".join(f"{k}={v}" for k, v in machine["blas_variables"].items()) or "none"
    return (["machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()
                                     if isinstance(v, (str, int)) and not k.endswith("missing")),
             f"BLAS as loaded: {blas}; variables the host set: {variables}"]
            + host.blas_warnings(machine["blas_variables"], host.cpu_vector_level())
            + [f"load average (1 min) {machine['load_average_start']} at the start, "
               f"{machine['load_average_end']} at the end"])


def roof_lines(machine):
    """Each roof as the best of the rounds (an upper bound), with the rounds' spread (IQR/median)."""
    roofs, spreads = machine["roofs"], machine["roof_spread"]

    def rate(name, unit="GB/s"):
        return f"{roofs[name] / 1e9:.1f} {unit} ({spreads[name]:.0%})"
    products = ", ".join(f"{label} BLAS {rate(f'products {label}', 'GFLOP/s')}"
                         + (f" fused {rate(f'fused products {label}', 'GFLOP/s')}"
                            if f"fused products {label}" in roofs else "")
                         for label in roofline.benchmark_variants())
    readers = {name[len(READ_PREFIX):]: roofs[name] for name in roofs if name.startswith(READ_PREFIX)}
    best = f", {max(readers, key=readers.get)} of {', '.join(readers)}" if readers else ""
    return [f"roofs, best of {machine['rounds']} rounds (IQR/median of the rounds): read bandwidth "
            f"{rate('read_bandwidth')}{best}, copy bandwidth {rate('copy_bandwidth')}, float32 GEMM "
            f"{rate('gemm_flop_rate', 'GFLOP/s')}, classic ridge point "
            f"{roofs['gemm_flop_rate'] / roofs['copy_bandwidth']:.1f} FLOP/byte",
            f"decode products in cache: {products}"]


def fit_lines(rows):
    """The linear fit of time against bytes, per variant and path, where the contexts allow one."""
    lines = []
    for path in PATHS:
        for variant in roofline.benchmark_variants():
            fit = linear_fit(rows, variant, path)
            if fit:
                lines.append(f"linear fit {variant} ({path}, s >= {FIT_FROM:,}, time = t0 + bytes / slope): "
                             f"slope {fit[0] / 1e9:.1f} GB/s, R^2 {fit[1]:.3f}")
    return lines


def peer_lines(machine):
    """Whether the peer ran: its version, or that its row was skipped and why."""
    if machine["peer_missing"]:
        return [f"peer: PyTorch's sdpa row skipped: {machine['peer_missing']}"]
    return [f"peer: torch {machine['torch']} scaled_dot_product_attention (CPU, enable_gqa=True), "
            f"same caches and threads; {PEER_SKIPS_MLA}"]


if __name__ == "__main__":
    main()
