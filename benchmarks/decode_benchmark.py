"""Time one decode step of attention over a KV cache and compare it with this machine's limits.

One layer, one new token, Llama 3 70B's 64 query heads of 128, float32 on the CPU, for MHA,
GQA-8, MQA and MLA (DeepSeek-V2's latent, absorbed form), through mha_kit's own decode path
(:func:`mha_kit.decode_attention`, :func:`mha_kit.latent_decode_attention`). In the same run it
measures the machine's memory bandwidth (a STREAM-style copy) and float32 matrix-multiply rate
(a large GEMM), and reports each variant against its roofline bound.

    python benchmarks/decode_benchmark.py                 # full run, about a minute on 2 cores
    python benchmarks/decode_benchmark.py --quick         # seconds: small contexts, one repeat
    python benchmarks/decode_benchmark.py --out benchmarks/results_reference   # the book's copy

Writes ``decode_benchmark.csv``, ``machine.json`` and ``report.txt`` (what it printed) to ``--out`` (default benchmarks/results/).
Book: chapter "Measure it yourself".
"""
from __future__ import annotations

import os

# BLAS must run one thread per call so that mha_kit's own threads get the cores (see
# mha_kit.cache._default_threads); this has to happen before NumPy is imported.
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
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
TARGETS = {"MHA": 0.70, "GQA-8": 0.50, "MQA": 0.40, "MLA": 0.40}  # fraction of roofline speed at 32k
MIN_GQA_SPEEDUP = 4.0  # GQA-8 over MHA at 32k (the byte ratio is 8)
FIT_FROM = 8192  # contexts used for the linear fit of time against bytes
COLUMNS = ("context", "variant", "kv_bytes", "macs", "median_s", "gb_per_s", "gflop_per_s",
           "bound_s", "limited_by", "roofline_fraction", "speedup_vs_mha")


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


def on_threads(pool, funcs):
    """Run every function at once, one per thread, and wait for all."""
    return list(pool.map(lambda f: f(), funcs))


def copy_bandwidth(pool, threads, nbytes, repeats):
    """STREAM-style copy: bytes/s counting one read and one write per element, all threads.

    A limit is what the machine can do, so the fastest run counts (other work only slows it).
    """
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    parts = np.array_split(np.arange(src.size), threads)
    cuts = [(p[0], p[-1] + 1) for p in parts]
    copies = [lambda a=a, b=b: np.copyto(dst[a:b], src[a:b]) for a, b in cuts]
    return 2 * src.nbytes / min(run_times(lambda: on_threads(pool, copies), repeats, 2))


def gemm_flop_rate(pool, threads, size, repeats):
    """float32 matrix multiply of two (size, size) matrices, rows split over the threads: FLOP/s."""
    rng = np.random.default_rng(0)
    a, b = rng.random((size, size), dtype=np.float32), rng.random((size, size), dtype=np.float32)
    rows = np.array_split(np.arange(size), threads)
    products = [lambda r=r: a[r[0]:r[-1] + 1] @ b for r in rows]
    return 2 * size**3 / min(run_times(lambda: on_threads(pool, products), repeats, 1))


def decode_steps(cfg, max_context, threads, seed=0):
    """A cache of ``max_context`` random float32 tokens and ``step(s)``: one decode over the first ``s``.

    Each step is the decode path the book uses: :func:`mha_kit.decode_attention`, or for MLA
    :func:`mha_kit.latent_decode_attention` over the cached ``[c_KV, k_rope]``.
    """
    rng = np.random.default_rng(seed)
    if cfg.variant == "mla":
        kv = rng.random((1, max_context, cfg.kv_lora_rank + cfg.qk_rope_head_dim), dtype=np.float32)
        q = rng.standard_normal((cfg.num_heads, kv.shape[-1]), dtype=np.float32)  # (h, d_c + d_rope)
        return lambda s: mk.latent_decode_attention(q, kv[:, :s], cfg.kv_lora_rank, num_threads=threads)
    k, v = (rng.random((cfg.num_kv_heads, max_context, cfg.head_dim), dtype=np.float32) for _ in "kv")
    q = rng.standard_normal((cfg.num_heads, cfg.head_dim), dtype=np.float32)  # (h, d_h)
    return lambda s: mk.decode_attention(q, k[:, :s], v[:, :s], num_threads=threads)


def measure_decode(contexts, repeats, warmup, threads):
    """Median seconds of one decode step, ``{(variant, context): seconds}``.

    Every round times each point once, so a burst of other work on the machine spreads over all
    points instead of spoiling one, and no cache stays warm in the CPU's caches between its steps
    (as in a real model, where the other layers run in between).
    """
    variants = roofline.benchmark_variants()
    steps = {label: decode_steps(cfg, max(contexts), threads) for label, cfg in variants.items()}
    times = {(label, s): [] for label in variants for s in contexts}
    for round_ in range(warmup + repeats):
        for label, s in times:
            seconds = run_times(lambda: steps[label](s), 1, 0)
            times[(label, s)] += seconds if round_ >= warmup else []
    return {point: float(np.median(t)) for point, t in times.items()}


def table_rows(medians, bandwidth, flop_rate, dtype="fp32"):
    """Rows of the table: counts, achieved rates, roofline fraction and speed-up over MHA."""
    variants = roofline.benchmark_variants()
    rows = [table_row(label, variants[label], s, seconds, bandwidth, flop_rate, dtype)
            for (label, s), seconds in medians.items()]
    for r in rows:
        r["speedup_vs_mha"] = medians[("MHA", r["context"])] / r["median_s"]
    return rows


def table_row(label, cfg, s, seconds, bandwidth, flop_rate, dtype="fp32"):
    """Counts, achieved rates and the roofline fraction (bound / time) of one measurement."""
    kv_bytes, macs = mk.kv_bytes_read(cfg, s, dtype), mk.attention_macs(cfg, s)
    bound = roofline.roofline_seconds(kv_bytes, 2 * macs, bandwidth, flop_rate)
    return {"context": s, "variant": label, "kv_bytes": kv_bytes, "macs": macs, "median_s": seconds,
            "gb_per_s": kv_bytes / seconds / 1e9, "gflop_per_s": 2 * macs / seconds / 1e9,
            "bound_s": bound, "limited_by": roofline.limited_by(cfg, s, bandwidth, flop_rate, dtype),
            "roofline_fraction": bound / seconds}


def linear_fit(rows, variant, from_context=FIT_FROM):
    """Fit ``time = t0 + bytes / rate`` over the largest contexts: (rate in bytes/s, R^2), or None."""
    points = [(r["kv_bytes"], r["median_s"]) for r in rows if r["variant"] == variant and r["context"] >= from_context]
    if len(points) < 2:
        return None
    x, y = np.array(points, dtype=float).T
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (slope * x + intercept)) ** 2) / max(np.sum((y - y.mean()) ** 2), 1e-30)
    return 1 / slope, float(r2)


def summary_lines(rows, target_context=32768):
    """PASS/FAIL per target at ``target_context`` (skipped when it was not measured)."""
    at = {r["variant"]: r for r in rows if r["context"] == target_context}
    if not at:
        return [f"targets: not checked (no {target_context:,}-token run; use the full benchmark)"]
    lines = []
    for variant, need in TARGETS.items():
        got = at[variant]["roofline_fraction"]
        lines.append(f"{'PASS' if got >= need else 'FAIL'}  {variant} at {target_context:,}: "
                     f"{got:.0%} of roofline speed (target {need:.0%})")
    speedup = at["GQA-8"]["speedup_vs_mha"]
    lines.append(f"{'PASS' if speedup >= MIN_GQA_SPEEDUP else 'FAIL'}  GQA-8 over MHA at {target_context:,}: "
                 f"{speedup:.1f}x faster (target {MIN_GQA_SPEEDUP:.0f}x; bytes 8x fewer)")
    return lines


def machine_description(threads):
    """CPU model, cores, Python, NumPy and its BLAS, and the thread settings of this run."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read_lines("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor() or platform.machine())
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": threads, "python": platform.python_version(),
            "numpy": np.__version__, "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
            "blas_threads": {name: os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                                     "OMP_NUM_THREADS")},
            "l3_cache": (_read_lines("/sys/devices/system/cpu/cpu0/cache/index3/size") or ["?"])[0].strip()}


def _read_lines(path):
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def format_table(rows):
    """The results as aligned text, one line per (context, variant)."""
    head = (f"{'context':>8} {'variant':<6} {'KV read':>10} {'mult-adds':>14} {'median':>10} "
            f"{'GB/s':>6} {'GFLOP/s':>8} {'bound':>10} {'limit':>7} {'roofline':>8} {'vs MHA':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['context']:>8,} {r['variant']:<6} {mk.format_bytes(r['kv_bytes']):>10} "
                     f"{mk.format_int(r['macs']):>14} {r['median_s'] * 1e3:>7.2f} ms {r['gb_per_s']:>6.1f} "
                     f"{r['gflop_per_s']:>8.1f} {r['bound_s'] * 1e3:>7.2f} ms {r['limited_by']:>7} "
                     f"{r['roofline_fraction']:>8.0%} {r['speedup_vs_mha']:>6.1f}x")
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


def measure_limits(pool, threads, quick, repeats):
    """(copy bandwidth in bytes/s, float32 GEMM rate in FLOP/s) on ``threads`` threads."""
    return (copy_bandwidth(pool, threads, (16 if quick else 512) << 20, repeats + 2),
            gemm_flop_rate(pool, threads, 256 if quick else 2048, repeats + 2))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", "--smoke", action="store_true", help="small contexts, one repeat: seconds")
    p.add_argument("--contexts", type=int, nargs="+", help="cache lengths s (default 1k .. 32k)")
    p.add_argument("--repeats", type=int, help="timed runs per point (median); default 15, quick 1")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads (default: every core)")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results", help="folder for CSV/JSON")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    contexts = args.contexts or (QUICK_CONTEXTS if args.quick else FULL_CONTEXTS)
    repeats = args.repeats or (1 if args.quick else 15)
    machine = machine_description(args.threads)
    with ThreadPoolExecutor(args.threads) as pool:
        before = measure_limits(pool, args.threads, args.quick, repeats)
        medians = measure_decode(contexts, repeats, 0 if args.quick else 2, args.threads)
        after = measure_limits(pool, args.threads, args.quick, repeats)
    limits = [float(x) for x in np.maximum(before, after)]  # the machine's limits, not a busy moment's
    machine.update(copy_bandwidth=limits[0], gemm_flop_rate=limits[1], ridge_point=roofline.ridge_point(*limits))
    rows = table_rows(medians, *limits)
    report = report_lines(machine, rows)
    print("\n".join(report))
    write_results(args.out, rows, machine, report)
    print(f"wrote decode_benchmark.csv, machine.json and report.txt to {args.out}")


def report_lines(machine, rows):
    """What the run prints: machine, limits, the table, the linear fits and the targets."""
    lines = ["machine: " + ", ".join(f"{k}={v}" for k, v in machine.items() if not isinstance(v, float)),
             f"copy bandwidth {machine['copy_bandwidth'] / 1e9:.1f} GB/s, float32 GEMM "
             f"{machine['gemm_flop_rate'] / 1e9:.1f} GFLOP/s, ridge point {machine['ridge_point']:.1f} FLOP/byte",
             format_table(rows)]
    for variant in roofline.benchmark_variants():
        fit = linear_fit(rows, variant)
        if fit:
            lines.append(f"linear fit {variant} (s >= {FIT_FROM:,}, time = t0 + bytes / slope): "
                         f"slope {fit[0] / 1e9:.1f} GB/s, R^2 {fit[1]:.3f}")
    return lines + summary_lines(rows)


if __name__ == "__main__":
    main()
