"""Time one decode step of attention over a KV cache and compare it with this machine's limits.

One layer, one new token, 64 query heads, float32 on the CPU, for four variants of that layer:
MHA, GQA-8, MQA (Llama 3 70B's heads of 128 with 64, 8 and 1 KV heads) and MLA (DeepSeek-V2's
latent, absorbed form), through mha_kit's own decode path (:func:`mha_kit.decode_attention`,
:func:`mha_kit.latent_decode_attention`), each with the kernel :func:`mha_kit.choose_decode_kernel`
picked for its shape on this machine, over a cache stored in either layout
(:data:`mha_kit.CACHE_LAYOUTS`: token-major as appended, or dim-major as vLLM keeps its values):
the layout and the kernel are both chosen by timing, per variant and context.

Each step is judged against two roofs measured in the same run, round by round beside the steps:

* classic: a STREAM-style copy (reads and writes) and a large square float32 GEMM;
* achievable: a read-only stream (what reading a KV cache needs) and the rate of the step's own
  products, q.K^T and p.V at the variant's shapes, timed in isolation on cache-resident blocks.

Every figure is the median of the rounds (at least five), printed with its spread.

    python benchmarks/decode_benchmark.py                 # full run, about a minute on 2 quiet cores
    python benchmarks/decode_benchmark.py --quick         # seconds: small contexts, five rounds
    python benchmarks/decode_benchmark.py --out benchmarks/results_reference   # the book's copy

Writes ``decode_benchmark.csv``, ``machine.json`` and ``report.txt`` (what it printed) to ``--out``
(default benchmarks/results/). Book: chapter "Measure it yourself".
"""
from __future__ import annotations

import os

# BLAS must run one thread per call so that mha_kit's own threads get the cores (see
# mha_kit.cache._default_threads); this has to happen before NumPy is imported.
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
import mha_kit as mk  # noqa: E402
from mha_kit import roofline  # noqa: E402

FULL_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
QUICK_CONTEXTS = (256, 512)
MIN_REPEATS = 5  # every figure is the median of at least this many rounds
TARGET_CONTEXT = 32768
TARGET_ACHIEVABLE = 0.70  # every variant: fraction of its achievable roof's speed at 32K
TARGET_READ = 0.70  # MHA: fraction of the read-bandwidth roof's speed at 32K
FIT_FROM = 8192  # contexts used for the linear fit of time against bytes
PRODUCT_FLOPS = 1 << 26  # FLOPs per thread in one timing of a variant's isolated products
PRODUCT_TOKENS = 4096  # longest block the products are timed on: 2 MiB of float32 keys of 128
COLUMNS = ("context", "variant", "kernel", "layout", "kv_bytes", "macs", "median_s", "spread", "gb_per_s",
           "gflop_per_s", "bound_s", "limited_by", "roofline_fraction", "achievable_s",
           "achievable_limited_by", "achievable_fraction", "read_fraction", "speedup_vs_mha")


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
               mk.store_cache(rng.random((1, tokens, d_k), dtype=np.float32), choice["layout"])[0])
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
        kv = mk.store_cache(rng.random((1, max_context, cfg.kv_lora_rank + cfg.qk_rope_head_dim), dtype=np.float32),
                            layout)
        q = rng.standard_normal((cfg.num_heads, kv.shape[-1]), dtype=np.float32)
        return q, kv, kv[..., :cfg.kv_lora_rank]
    k, v = (mk.store_cache(rng.random((cfg.num_kv_heads, max_context, cfg.head_dim), dtype=np.float32), layout)
            for _ in "kv")
    return rng.standard_normal((cfg.num_heads, cfg.head_dim), dtype=np.float32), k, v


def decode_step(cfg, inputs, s, threads, options):
    """One decode step over the first ``s`` tokens through the book's path, with kernel ``options``."""
    q, k, v = inputs
    if cfg.variant == "mla":
        return lambda: mk.latent_decode_attention(q, k[:, :s], cfg.kv_lora_rank, num_threads=threads, **options)
    return lambda: mk.decode_attention(q, k[:, :s], v[:, :s], num_threads=threads, **options)


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
                choice = mk.choose_decode_kernel(q, k[:, :s], v[:, :s], num_threads=threads, repeats=repeats)
                choices.append(choice | {"layout": layout, "seconds": {f"{key}@{layout}": t for key, t in
                                                                       choice["seconds"].items()}})
            best = min(choices, key=lambda c: c["seconds"][f"{_kernel_name(c)}@{c['layout']}"])
            kernels[(label, s)] = best | {"seconds": {k: t for c in choices for k, t in c["seconds"].items()}}
    return kernels


def measure(probes_for, contexts, repeats, warmup, threads):
    """Choose each shape's kernel, then time every decode step and every roof round by round.

    ``probes_for(kernels, inputs)`` returns the roofs to measure, each a function giving its rate
    once (``inputs``: each variant's cache in the layout chosen at the largest context).
    Returns ``(kernels, {(variant, s): [seconds]}, {roof: [rate]})``.
    """
    variants = roofline.benchmark_variants()
    inputs = {label: {layout: decode_inputs(cfg, max(contexts), layout=layout) for layout in mk.CACHE_LAYOUTS}
              for label, cfg in variants.items()}
    kernels = choose_kernels(variants, inputs, contexts, threads, 1 if warmup == 0 else MIN_REPEATS)
    chosen = {label: inputs[label][kernels[(label, max(contexts))]["layout"]] for label in variants}
    steps = {(label, s): decode_step(variants[label], inputs[label][kernels[(label, s)]["layout"]], s, threads,
                                     {key: kernels[(label, s)][key] for key in ("kernel", "block_len")})
             for label in variants for s in contexts}
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
    """The roofs measured each round: copy, read, GEMM, and each variant's products.

    With ``inputs`` (each variant's cache) and ``context``, also each variant's products streamed
    over that cache (:func:`streamed_products`).
    """
    nbytes = (16 if quick else 512) << 20
    probes = {"copy_bandwidth": copy_stream(pool, threads, nbytes), "read_bandwidth": read_stream(pool, threads, nbytes),
              "gemm_flop_rate": gemm_rate(pool, threads, 256 if quick else 2048)}
    for label, cfg in roofline.benchmark_variants().items():
        probes[f"products {label}"] = product_rate(pool, threads, cfg, kernels[label])  # kernels: label -> choice
        if inputs is not None:
            flops = 2 * mk.attention_macs(cfg, context)
            probes[f"streamed {label}"] = streamed_products(pool, threads, kernels[label], inputs[label], context, flops)
    return probes


def table_rows(times, roofs, kernels, dtype="fp32"):
    """Rows of the table: counts, medians and spread, both roofs' fractions, speed-up over MHA."""
    variants = roofline.benchmark_variants()
    rows = [table_row(label, variants[label], s, seconds, roofs, dtype) | {"kernel": _kernel_name(kernels[(label, s)]),
                                                                           "layout": kernels[(label, s)]["layout"]}
            for (label, s), seconds in times.items()]
    medians = {(r["variant"], r["context"]): r["median_s"] for r in rows}
    for r in rows:
        r["speedup_vs_mha"] = medians[("MHA", r["context"])] / r["median_s"]
    return rows


def _kernel_name(choice):
    """``"blocks/512"``: a kernel and its block length (``default``: the kernel's own)."""
    return f"{choice['kernel']}/{choice['block_len'] or 'default'}"


def table_row(label, cfg, s, seconds, roofs, dtype="fp32"):
    """One measurement against both roofs. ``roofs``: median rates (bytes/s, FLOP/s) by name."""
    kv_bytes, macs = mk.kv_bytes_read(cfg, s, dtype), mk.attention_macs(cfg, s)
    median = float(np.median(seconds))
    bound = roofline.roofline_seconds(kv_bytes, 2 * macs, roofs["copy_bandwidth"], roofs["gemm_flop_rate"])
    products = roofs[f"products {label}"]
    achievable = roofline.roofline_seconds(kv_bytes, 2 * macs, roofs["read_bandwidth"], products)
    return {"context": s, "variant": label, "kv_bytes": kv_bytes, "macs": macs, "median_s": median,
            "spread": spread(seconds), "gb_per_s": kv_bytes / median / 1e9, "gflop_per_s": 2 * macs / median / 1e9,
            "bound_s": bound, "limited_by": roofline.limited_by(cfg, s, roofs["copy_bandwidth"], roofs["gemm_flop_rate"], dtype),
            "roofline_fraction": bound / median, "achievable_s": achievable,
            "achievable_limited_by": "memory" if kv_bytes / roofs["read_bandwidth"] >= 2 * macs / products else "compute",
            "achievable_fraction": achievable / median, "read_fraction": kv_bytes / roofs["read_bandwidth"] / median}


def linear_fit(rows, variant, from_context=FIT_FROM):
    """Fit ``time = t0 + bytes / rate`` over the largest contexts: (rate in bytes/s, R^2), or None."""
    points = [(r["kv_bytes"], r["median_s"]) for r in rows if r["variant"] == variant and r["context"] >= from_context]
    if len(points) < 2:
        return None
    x, y = np.array(points, dtype=float).T
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (slope * x + intercept)) ** 2) / max(np.sum((y - y.mean()) ** 2), 1e-30)
    return 1 / slope, float(r2)


def summary_lines(rows, target_context=TARGET_CONTEXT):
    """PASS/FAIL per target at ``target_context``, the GQA-8 speed-up explained, and the verdict last."""
    at = {r["variant"]: r for r in rows if r["context"] == target_context}
    if not at:
        return [f"targets: not checked (no {target_context:,}-token run; use the full benchmark)"]
    checks = [(f"{variant} at {target_context:,}: {r['achievable_fraction']:.0%} of its achievable roof's speed "
               f"(target {TARGET_ACHIEVABLE:.0%})", r["achievable_fraction"] >= TARGET_ACHIEVABLE) for variant, r in at.items()]
    mha = at["MHA"]["read_fraction"]
    checks.append((f"MHA at {target_context:,}: {mha:.0%} of the read-bandwidth roof's speed (target {TARGET_READ:.0%})",
                   mha >= TARGET_READ))
    lines = [f"{'PASS' if ok else 'FAIL'}  {text}" for text, ok in checks]
    lines.append(gqa_speedup_line(at))
    failed = sum(not ok for _, ok in checks)
    return lines + ["targets met: all" if not failed else f"targets NOT met: {failed} of {len(checks)} failed"]


def gqa_speedup_line(at):
    """GQA-8's speed-up over MHA, beside the byte ratio and what the achievable roofs predict."""
    gqa, mha = at["GQA-8"], at["MHA"]
    why = ("; GQA-8's achievable roof is set by its skinny products, not its bytes"
           if gqa["achievable_limited_by"] == "compute" else "")
    return (f"INFO  GQA-8 over MHA at {gqa['context']:,}: {gqa['speedup_vs_mha']:.1f}x faster for "
            f"{mha['kv_bytes'] / gqa['kv_bytes']:.0f}x fewer bytes; the achievable roofs predict "
            f"{mha['achievable_s'] / gqa['achievable_s']:.1f}x{why}")


def overlap_lines(rows, roofs):
    """Per variant at the largest context: bytes alone, products in cache, and both streamed together.

    ``overlap`` is how much of the shorter of the first two the streamed products hid: 0% when their
    time is the sum (load, then multiply), 100% when it is the larger (the roofs' assumption).
    """
    largest = max(r["context"] for r in rows)
    lines = []
    for r in (r for r in rows if r["context"] == largest and f"streamed {r['variant']}" in roofs):
        flops = 2 * r["macs"]
        load, multiply = r["kv_bytes"] / roofs["read_bandwidth"], flops / roofs[f"products {r['variant']}"]
        both = flops / roofs[f"streamed {r['variant']}"]
        overlap = roofline.overlap(load, multiply, both)
        lines.append(f"loads and products, {r['variant']} at {largest:,}: bytes alone {load * 1e3:.1f} ms, products in "
                     f"cache {multiply * 1e3:.1f} ms, both streamed {both * 1e3:.1f} ms: overlap {overlap:.0%} "
                     f"(step {r['median_s'] * 1e3:.1f} ms)")
    return lines


def machine_description(threads):
    """CPU model, cores, Python, NumPy and its BLAS, the thread settings, the date and the load."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read_lines("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor() or platform.machine())
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": threads, "python": platform.python_version(),
            "numpy": np.__version__, "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
            "blas_threads": {name: os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                                     "OMP_NUM_THREADS")},
            "l2_cache": _cache_size(2), "l3_cache": _cache_size(3),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load_average_start": _load_average()}


def _cache_size(index):
    """The size of CPU cache level 2 or 3 as the kernel reports it (``"1024K"``), or ``"?"``."""
    for entry in range(6):
        folder = f"/sys/devices/system/cpu/cpu0/cache/index{entry}"
        if (_read_lines(f"{folder}/level") or [""])[0].strip() == str(index):
            return (_read_lines(f"{folder}/size") or ["?"])[0].strip()
    return "?"


def _load_average():
    """The 1-minute load average (runnable processes), or None where the OS does not tell."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _read_lines(path):
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def format_table(rows):
    """The results as aligned text, one line per (context, variant)."""
    head = (f"{'context':>8} {'variant':<6} {'kernel':<18} {'layout':<6} {'KV read':>8} {'median':>10} {'IQR':>4} {'GB/s':>5} "
            f"{'GFLOP/s':>7} {'classic':>7} {'achievable':>14} {'read':>5} {'vs MHA':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['context']:>8,} {r['variant']:<6} {r['kernel']:<18} {r['layout']:<6} {mk.format_bytes(r['kv_bytes']):>8} "
                     f"{r['median_s'] * 1e3:>7.2f} ms {r['spread']:>4.0%} {r['gb_per_s']:>5.1f} {r['gflop_per_s']:>7.1f} "
                     f"{r['roofline_fraction']:>7.0%} {r['achievable_fraction']:>4.0%} {r['achievable_limited_by']:>9} "
                     f"{r['read_fraction']:>5.0%} {r['speedup_vs_mha']:>5.1f}x")
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
    machine = machine_description(args.threads)
    with ThreadPoolExecutor(args.threads) as pool:
        kernels, times, rates = run(pool, args, contexts, repeats)
    roofs = {name: float(np.median(r)) for name, r in rates.items()}
    machine.update(load_average_end=_load_average(), rounds=repeats, roofs=roofs,
                   roof_spread={name: spread(r) for name, r in rates.items()},
                   kernels={f"{label}@{s}": choice for (label, s), choice in kernels.items()})
    rows = table_rows(times, roofs, kernels)
    report = report_lines(machine, rows)
    print("\n".join(report))
    write_results(args.out, rows, machine, report)
    print(f"wrote decode_benchmark.csv, machine.json and report.txt to {args.out}")


def run(pool, args, contexts, repeats):
    """Choose the kernels, then time roofs and steps (see :func:`measure`)."""
    def probes_for(kernels, inputs):
        chosen = {label: kernels[(label, max(contexts))] for label in roofline.benchmark_variants()}
        return roof_probes(pool, args.threads, args.quick, chosen, inputs, max(contexts))
    return measure(probes_for, contexts, repeats, 0 if args.quick else 2, args.threads)


def report_lines(machine, rows):
    """What the run prints: machine, roofs with their spread, kernels, the table, fits, targets."""
    roofs, spreads = machine["roofs"], machine["roof_spread"]
    lines = ["machine: " + ", ".join(f"{k}={v}" for k, v in machine.items() if not isinstance(v, (float, dict))),
             f"load average (1 min) {machine['load_average_start']} at the start, {machine['load_average_end']} at the end",
             f"roofs, median of {machine['rounds']} rounds (IQR/median): read bandwidth "
             f"{roofs['read_bandwidth'] / 1e9:.1f} GB/s ({spreads['read_bandwidth']:.0%}), copy bandwidth "
             f"{roofs['copy_bandwidth'] / 1e9:.1f} GB/s ({spreads['copy_bandwidth']:.0%}), float32 GEMM "
             f"{roofs['gemm_flop_rate'] / 1e9:.1f} GFLOP/s ({spreads['gemm_flop_rate']:.0%}), classic ridge point "
             f"{roofs['gemm_flop_rate'] / roofs['copy_bandwidth']:.1f} FLOP/byte",
             "decode products in isolation: " + ", ".join(
                 f"{label} {roofs[f'products {label}'] / 1e9:.1f} GFLOP/s ({spreads[f'products {label}']:.0%})"
                 for label in roofline.benchmark_variants()),
             format_table(rows)]
    for variant in roofline.benchmark_variants():
        fit = linear_fit(rows, variant)
        if fit:
            lines.append(f"linear fit {variant} (s >= {FIT_FROM:,}, time = t0 + bytes / slope): "
                         f"slope {fit[0] / 1e9:.1f} GB/s, R^2 {fit[1]:.3f}")
    return lines + overlap_lines(rows, roofs) + summary_lines(rows)


if __name__ == "__main__":
    main()
