"""benchmarks/decode_benchmark.py in its quick mode, its bookkeeping, and mha_kit.roofline.

No timing is asserted here: speed claims live in the benchmark's own summary line.
"""
import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha_kit as mk  # noqa: E402

from benchmarks import numpy_decode as nd  # noqa: E402
from mha_kit import plots, roofline  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ["-m", "benchmarks.decode_benchmark"]  # run from the repository's root
VARIANTS = ["MHA", "GQA-8", "MQA", "MLA"]


@pytest.fixture(scope="module")
def bench():
    """The script as a module; its BLAS settings are undone so other tests see the usual environment."""
    saved = dict(os.environ)
    from benchmarks import decode_benchmark

    os.environ.clear()
    os.environ.update(saved)
    return decode_benchmark


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("decode_benchmark")
    result = subprocess.run([sys.executable, *SCRIPT, "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)  # numba compiles once, then caches
    return result, out


def test_quick_run_succeeds_quietly(quick_run):
    result, _ = quick_run
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def paths(bench):
    """The paths this machine runs: NumPy always, the fused kernel with numba, the peer with PyTorch."""
    return [p for p in bench.PATHS if p == "numpy" or (p == "fused" and not bench.fd.MISSING)
            or (p == "torch" and not bench.peer.MISSING)]


def test_quick_run_prints_a_table_with_every_variant_and_path(quick_run, bench):
    lines = quick_run[0].stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:4] == ["context", "variant", "path", "kernel"])
    assert set(lines[header + 1]) == {"-"}
    expected = [(c, v, p) for v in VARIANTS for c in ("256", "512") for p in paths(bench)
                if not (p == "torch" and v == "MLA")]  # the peer has no MLA path (PEER_SKIPS_MLA)
    rows = [line.split() for line in lines[header + 2: header + 2 + len(expected)]]
    assert [(r[0], r[1], r[2]) for r in rows] == expected
    for r in rows:
        if r[2] == "numpy":
            assert r[3].split("/")[0] in nd.DECODE_KERNELS and r[4] in nd.CACHE_LAYOUTS  # the choice kept
        assert r[8] == "ms" and r[9].endswith("%") and r[-2].endswith("x")  # median, its spread, speed-up over MHA
        assert r[-4] in ("memory", "compute")  # what sets the achievable roof
        peer_ran = "torch" in paths(bench) and r[1] != "MLA"
        assert r[-1].endswith("x") if peer_ran else r[-1] == "-"  # ratio to the peer
    assert any(line.startswith("roofs, best of 5 rounds") and "read bandwidth" in line for line in lines)
    assert any(line.startswith("decode products in cache: MHA BLAS ") for line in lines)
    assert any(line.startswith("BLAS as loaded: ") for line in lines)
    assert any("threads=" in line and "cpu_vector_level=" in line for line in lines)
    assert any(line.startswith("load average (1 min) ") for line in lines)
    assert any(line.startswith("fractions of the roofs: not reported") for line in lines)
    assert not any(line.startswith(("PASS", "FAIL", "targets")) for line in lines)  # no targets of ours
    overlap = [line for line in lines if line.startswith("loads and products, ")]
    assert [(line.split()[3], line.split()[4]) for line in overlap] == [
        (v, f"({p})") for v in VARIANTS for p in paths(bench) if p != "torch"]
    (peer_line,) = [line for line in lines if line.startswith("peer: ")]
    assert ("row skipped" in peer_line) == ("torch" not in paths(bench))
    assert ("MLA: no peer row" in peer_line) == ("torch" in paths(bench))


def test_quick_run_writes_csv_and_machine(quick_run, bench):
    _, out = quick_run
    with open(out / "decode_benchmark.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(bench.COLUMNS) and len(rows) == 8 * len(paths(bench)) - 2 * ("torch" in paths(bench))
    cfg = roofline.benchmark_variants()["GQA-8"]
    gqa = next(r for r in rows if r["variant"] == "GQA-8" and r["context"] == "512" and r["path"] == "numpy")
    assert int(gqa["kv_bytes"]) == mk.kv_bytes_read(cfg, 512, "fp32") == 512 * 2 * 8 * 128 * 4
    assert int(gqa["macs"]) == 2 * 64 * 512 * 128
    machine = json.loads((out / "machine.json").read_text())
    assert {"cpu", "cores", "threads", "numpy", "blas_libraries", "blas_variables", "roofs", "roof_spread",
            "roof_median", "kernels", "rounds", "numba", "torch"} <= set(machine)
    fused = {f"fused products {v}" for v in VARIANTS} if "fused" in paths(bench) else set()
    readers = {f"read_bandwidth {r}" for r in ("sum", "gemv") + (("fused",) if "fused" in paths(bench) else ())}
    assert machine["roofs"]["read_bandwidth"] == max(machine["roofs"][name] for name in readers)  # the best read
    assert set(machine["roofs"]) == {"copy_bandwidth", "read_bandwidth", "gemm_flop_rate"} | readers | {
        f"products {v}" for v in VARIANTS} | {f"streamed {v}" for v in VARIANTS} | fused
    assert all(machine["roofs"][name] >= machine["roof_median"][name] for name in machine["roofs"])  # best of rounds
    assert set(machine["kernels"]) == {f"{v}@{s}" for v in VARIANTS for s in (256, 512)}
    assert machine["kernels"]["GQA-8@512"]["kernel"] == gqa["kernel"].split("/")[0]
    assert machine["kernels"]["GQA-8@512"]["layout"] == gqa["layout"] in nd.CACHE_LAYOUTS
    # every candidate of both layouts was timed, and the one kept is the fastest of them
    timed = machine["kernels"]["GQA-8@512"]["seconds"]
    assert {key.rsplit("@", 1)[1] for key in timed} == set(nd.CACHE_LAYOUTS)
    assert timed[f"{gqa['kernel']}@{gqa['layout']}"] == min(timed.values())


ROOFS = {"copy_bandwidth": 40e9, "read_bandwidth": 20e9, "gemm_flop_rate": 200e9,
         **{f"products {v}": 10e9 for v in VARIANTS}}


def row(variant, context, seconds, kv_bytes=1, macs=1, **extra):
    return dict(variant=variant, context=context, median_s=seconds, kv_bytes=kv_bytes, macs=macs, **extra)


def test_table_row_against_hand_formulas(bench):
    cfg = roofline.benchmark_variants()["MHA"]
    r = bench.table_row("MHA", cfg, 1024, [0.005, 0.004, 0.003, 0.004, 0.008], ROOFS)
    kv_bytes, flops = 1024 * 2 * 64 * 128 * 4, 2 * (2 * 64 * 1024 * 128)  # 64 MiB of float32 keys and values
    assert r["kv_bytes"] == kv_bytes and 2 * r["macs"] == flops
    assert r["median_s"] == 0.004 and r["spread"] == pytest.approx((0.005 - 0.004) / 0.004)  # IQR over median
    assert r["gb_per_s"] == pytest.approx(kv_bytes / 0.004 / 1e9)
    assert r["bound_s"] == pytest.approx(kv_bytes / 40e9)  # classic: copy bandwidth; memory-bound
    assert r["roofline_fraction"] == pytest.approx(kv_bytes / 40e9 / 0.004)
    assert r["limited_by"] == "memory"
    assert r["achievable_s"] == pytest.approx(max(kv_bytes / 20e9, flops / 10e9))  # read stream, own products
    assert r["achievable_limited_by"] == "memory"  # 3.4 ms of bytes against 1.7 ms of products
    assert r["read_fraction"] == pytest.approx(kv_bytes / 20e9 / 0.004)


def test_table_row_achievable_roof_can_be_compute_bound(bench):
    cfg = roofline.benchmark_variants()["GQA-8"]
    r = bench.table_row("GQA-8", cfg, 32768, [0.02] * 5, ROOFS | {"products GQA-8": 40e9})
    assert r["achievable_s"] == pytest.approx(4 * 64 * 32768 * 128 / 40e9)  # FLOPs at the products' rate
    assert r["achievable_limited_by"] == "compute" and r["limited_by"] == "memory"  # the classic roof disagrees
    assert r["spread"] == 0


def targets_rows(fused, read_mha, vs_torch=(1.2, 1.1, 1.0, 1.5), low=None):
    """Rows at 32K: NumPy (MHA's read fraction), fused (achievable fractions) and the peer, per variant."""
    rows = []
    for v, f, t, peer_ratio in zip(VARIANTS, fused, (0.06, 0.02, 0.01, 0.03), vs_torch):
        common = dict(kv_bytes=2**31 // (1 if v == "MHA" else 8), achievable_s=t, achievable_limited_by="compute")
        rows += [row(v, 32768, 1.0, path="numpy", achievable_fraction=0.5, read_fraction=read_mha, vs_torch="",
                     speedup_vs_mha=3.6 if v == "GQA-8" else 1.0, **common),
                 row(v, 32768, 1.0, path="fused", achievable_fraction=f, read_fraction=0.5, vs_torch=peer_ratio,
                     speedup_vs_mha=6.0 if v == "GQA-8" else 1.0, **common)]
    if low:
        rows[0]["achievable_fraction"] = low  # MHA's NumPy step faster than its roof
    return rows


def test_summary_ends_with_each_paths_fraction_and_bound(bench):
    """The last line reports each path's share of its achievable roof and what bounds it, no pass or fail."""
    lines = bench.summary_lines(targets_rows([0.71, 0.49, 0.8, 0.75], 0.7))
    assert not any(line.startswith(("PASS", "FAIL", "targets")) for line in lines)
    assert lines[-1] == ("at 32,768 tokens, each path's share of its achievable roof (what bounds the roof): "
                         "MHA (products) numpy 50%, fused 71%; GQA-8 (products) numpy 50%, fused 49%; "
                         "MQA (products) numpy 50%, fused 80%; MLA (products) numpy 50%, fused 75%")
    assert lines[0] == "INFO  MHA (fused) at 32,768: 1.20x the speed of PyTorch's sdpa"
    assert lines[4] == ("INFO  MHA (numpy) at 32,768: 70% of the read-bandwidth roof's speed "
                        "(the best streaming read of the run)")
    assert "(numpy) at 32,768: 3.6x faster for 8x fewer bytes; the achievable roofs predict 3.0x" in lines[-3]
    assert "skinny products" in lines[-3] and lines[-2].startswith("INFO  GQA-8 over MHA (fused) at 32,768: 6.0x")
    assert bench.summary_lines([])[0].startswith("fractions of the roofs: not reported")


def test_bounds_line_names_bytes_for_a_memory_bound_roof(bench):
    rows = targets_rows([0.71, 0.49, 0.8, 0.75], 0.7)
    for r in rows:
        r["achievable_limited_by"] = "memory" if r["variant"] == "MHA" else "compute"
    assert "MHA (bytes) numpy 50%, fused 71%; GQA-8 (products)" in bench.summary_lines(rows)[-1]


def test_summary_without_the_peer_has_no_ratio(bench):
    rows = [r | {"vs_torch": ""} for r in targets_rows([0.71, 0.9, 0.8, 0.75], 0.7)]
    lines = bench.summary_lines(rows)
    assert not any("PyTorch's sdpa" in line for line in lines)
    assert lines[-1].startswith("at 32,768 tokens, each path's share")


def test_read_roof_is_the_best_streaming_read_of_each_round(bench):
    """A roof is an upper bound only as the best of the reads: per round the fastest reader, then the best round."""
    rates = {"read_bandwidth sum": [20e9, 22e9], "read_bandwidth gemv": [25e9, 21e9], "read_bandwidth fused": [24e9, 26e9],
             "copy_bandwidth": [30e9, 31e9]}
    merged = bench.with_read_roof(rates)
    assert merged["read_bandwidth"] == [25e9, 26e9] and merged["copy_bandwidth"] == [30e9, 31e9]
    assert bench.best_roofs(merged)["read_bandwidth"] == 26e9
    assert bench.with_read_roof({"copy_bandwidth": [1.0]}) == {"copy_bandwidth": [1.0]}  # no reader, no roof


def test_each_streaming_read_returns_a_rate(bench):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        probes = bench.read_probes(pool, 2, 1 << 20)
        assert {"read_bandwidth sum", "read_bandwidth gemv"} <= set(probes)
        assert ("read_bandwidth fused" in probes) == (not bench.fd.MISSING)
        assert all(probe() > 0 for probe in probes.values())


def test_a_step_faster_than_its_roof_gives_no_verdict(bench):
    """A roof is an upper bound: a median beyond it means the roof was measured low."""
    lines = bench.summary_lines(targets_rows([0.71, 0.9, 0.8, 0.75], 0.7, low=1.17))
    assert lines[-2] == "ROOF LOW  MHA (numpy) at 32,768: 117% of its achievable roof's speed"
    assert lines[-1] == "roof measured low, rerun: 1 step(s) faster than their achievable roof"
    assert not any(line.startswith(("targets", "at 32,768 tokens")) for line in lines)


def test_roofs_are_the_best_round_and_products_the_faster_path(bench):
    roofs = bench.best_roofs({"read_bandwidth": [20e9, 31e9, 25e9], "products MQA": [9e10, 8e10]})
    assert roofs == {"read_bandwidth": 31e9, "products MQA": 9e10}
    assert bench.products_roof(roofs, "MQA") == 9e10  # no fused kernel: BLAS's rate
    assert bench.products_roof(roofs | {"fused products MQA": 1.1e11}, "MQA") == 1.1e11


def test_stored_reference_has_no_step_beyond_its_roof():
    """benchmarks/results_reference: every median at least the achievable roof's time, recomputed from machine.json."""
    reference = ROOT / "benchmarks" / "results_reference"
    machine = json.loads((reference / "machine.json").read_text())
    with open(reference / "decode_benchmark.csv") as f:
        rows = list(csv.DictReader(f))
    roofs, variants = machine["roofs"], roofline.benchmark_variants()
    assert {(r["variant"], r["path"]) for r in rows if r["context"] == "32768"} >= {
        (v, p) for v in VARIANTS for p in ("numpy", "fused")}  # both paths, every variant, at the targets' context
    for r in rows:
        products = max(roofs[f"products {r['variant']}"], roofs.get(f"fused products {r['variant']}", 0))
        flops, nbytes = roofline.decode_flops(variants[r["variant"]], int(r["context"])), int(r["kv_bytes"])
        roof = roofline.roofline_seconds(nbytes, flops, roofs["read_bandwidth"], products)
        assert float(r["median_s"]) >= roof, (r["variant"], r["path"], r["context"])


def test_spread_is_the_interquartile_range_over_the_median(bench):
    assert bench.spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx((4 - 2) / 3)
    assert bench.spread([2.0] * 5) == 0


def test_repeats_below_five_are_refused(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeats", "3"])
    assert "--repeats must be at least 5 (medians, not luck), got 3" in capsys.readouterr().err


def test_linear_fit_recovers_a_rate(bench):
    rows = [row("MHA", s, 0.001 + s * 1000 / 25e9, kv_bytes=s * 1000, path="fused") for s in (4096, 8192, 16384, 32768)]
    rate, r2 = bench.linear_fit(rows, "MHA", "fused")
    assert rate == pytest.approx(25e9) and r2 == pytest.approx(1.0)
    assert bench.linear_fit(rows, "MQA", "fused") is None  # no points
    assert bench.linear_fit(rows, "MHA", "numpy") is None  # nor on another path


def test_run_times_counts_only_timed_runs(bench):
    calls = []
    times = bench.run_times(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(times) == 3 and len(calls) == 5 and min(times) >= 0


# ---------------------------------------------------------------------------------------------
# mha_kit.roofline
# ---------------------------------------------------------------------------------------------

def test_benchmark_variants_share_the_query_heads():
    variants = roofline.benchmark_variants()
    assert list(variants) == VARIANTS
    assert [v.num_heads for v in variants.values()] == [64] * 4
    assert [variants[k].num_kv_heads for k in ("MHA", "GQA-8", "MQA")] == [64, 8, 1]
    mla = variants["MLA"]
    assert (mla.kv_lora_rank, mla.qk_rope_head_dim) == (512, 64)  # DeepSeek-V2's latent


def test_ridge_point_and_roofline_seconds():
    assert roofline.ridge_point(20e9, 300e9) == pytest.approx(15.0)
    assert roofline.roofline_seconds(40e9, 100e9, 20e9, 300e9) == pytest.approx(2.0)  # memory: 40/20
    assert roofline.roofline_seconds(1e9, 600e9, 20e9, 300e9) == pytest.approx(2.0)  # compute: 600/300
    with pytest.raises(ValueError, match=r"^bandwidth and flop_rate must be positive, got 0 and 1$"):
        roofline.roofline_seconds(1, 1, 0, 1)


@pytest.mark.parametrize("label, intensity", [
    ("MHA", 0.5), ("GQA-8", 4.0), ("MQA", 32.0),  # float32: g / 2 FLOPs per byte
    ("MLA", 64 * (2 * 512 + 64) * 2 / (576 * 4)),  # h * (2 d_c + d_rope) MACs per (d_c + d_rope) floats
])
def test_decode_intensity_and_which_limit(label, intensity):
    cfg = roofline.benchmark_variants()[label]
    s = 4096
    flops, nbytes = roofline.decode_flops(cfg, s), mk.kv_bytes_read(cfg, s, "fp32")
    assert flops / nbytes == pytest.approx(intensity)
    assert roofline.limited_by(cfg, s, 20e9, 300e9, "fp32") == ("compute" if intensity > 15 else "memory")
    assert roofline.decode_bound_seconds(cfg, s, 20e9, 300e9, "fp32") == pytest.approx(
        max(nbytes / 20e9, flops / 300e9))


def test_token_memory_seconds_llama_3_70b():
    """80 layers x 8,192 tokens x 2 x 8 heads x 128 x 2 bytes, over 3.35 TB/s."""
    cfg = mk.PRESETS["llama-3-70b"]
    expected = 80 * 8192 * 2 * 8 * 128 * 2 / 3.35e12
    assert roofline.token_memory_seconds(cfg, 8192, 3.35e12) == pytest.approx(expected)
    assert expected == pytest.approx(0.000801, rel=1e-3)  # 2.5 GiB per token: 0.8 ms


# ---------------------------------------------------------------------------------------------
# plots.decode_benchmark_lines
# ---------------------------------------------------------------------------------------------

def test_decode_benchmark_lines_draws_one_line_per_variant_and_the_ceiling():
    rows = [row(v, s, str(s * 1e-6 * (i + 1)), kv_bytes=str(s * 1000)) for i, v in enumerate(VARIANTS)
            for s in (2048, 1024)]  # CSV strings, contexts out of order
    fig = plots.decode_benchmark_lines(rows, bandwidth=20e9)
    ax_time, ax_rate = fig.axes
    assert [line.get_label() for line in ax_time.lines] == VARIANTS
    assert list(ax_time.lines[0].get_xdata()) == [1024, 2048]
    assert ax_time.lines[1].get_color() == plots.VARIANT_COLORS["gqa"]
    assert ax_rate.lines[0].get_ydata() == pytest.approx([1.0, 1.0])  # 1000 bytes per microsecond: 1 GB/s
    assert ax_rate.lines[-1].get_ydata()[0] == pytest.approx(20.0)  # the measured ceiling
    assert ax_time.get_xscale() == ax_time.get_yscale() == "log"
    plt.close(fig)


def test_gpu_script_skips_without_torch_or_cuda():
    """Never times anything in CI: without torch (or a GPU) it says why and exits 0."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: the GPU script would run for real")
    result = subprocess.run([sys.executable, "-m", "benchmarks.gpu_decode"],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("gpu_decode: PyTorch is not installed; skipped")


def test_pipeline_script_lists_the_makefile_steps():
    from benchmarks import pipeline_times

    commands = pipeline_times.steps(Path("/tmp/x"))
    assert list(commands) == ["install", "book", "unit", "tests"]
    assert "--nbval" in commands["tests"] and "book/decode_benchmark.ipynb" in commands["tests"]
    assert "--path-output" in commands["book"]  # never the shared _build
    assert "requirements.txt" in commands["install"][-1]


def test_decode_intensity_mla_stand_in_and_deepseek_v2():
    """The chapter's corrected claim: the 64-head stand-in is memory-bound on both GPUs, DeepSeek-V2 is not."""
    stand_in, v2 = roofline.benchmark_variants()["MLA"], mk.PRESETS["deepseek-v2"]
    assert roofline.decode_intensity(v2) == pytest.approx(2176 / 9)  # 2*128*(2*512+64) / ((512+64)*2)
    assert roofline.decode_intensity(stand_in) == pytest.approx(1088 / 9)  # half the heads, half the FLOPs
    h100, h200 = roofline.ridge_point(3.35e12, 989e12), roofline.ridge_point(4.8e12, 989e12)
    assert (round(h200, 1), round(h100, 1)) == (206.0, 295.2)
    assert roofline.decode_intensity(stand_in) < h200 < roofline.decode_intensity(v2) < h100
    assert roofline.limited_by(v2, 8192, 4.8e12, 989e12) == "compute"
    assert roofline.limited_by(v2, 8192, 3.35e12, 989e12) == "memory"


def test_decode_benchmark_lines_draws_the_read_ceiling_when_given():
    rows = [row(v, 1024, "0.001", kv_bytes="1000000") for v in VARIANTS]
    _, ax_rate = plots.decode_benchmark_lines(rows, bandwidth=40e9, read_bandwidth=30e9).axes
    ceilings = [line for line in ax_rate.lines if line.get_label().startswith(("copy", "read"))]
    assert [line.get_label() for line in ceilings] == ["copy 40 GB/s", "read 30 GB/s"]
    assert ceilings[1].get_ydata()[0] == pytest.approx(30.0)


def test_decode_benchmark_machines_one_bar_per_machine_and_variant():
    old = [row(v, 32768, str(0.001 * (i + 1))) for i, v in enumerate(VARIANTS)] + [row("MHA", 1024, "9")]
    new = [row(v, 32768, str(0.002 * (i + 1))) for i, v in enumerate(VARIANTS)]
    (ax,) = plots.decode_benchmark_machines({"old": old, "new": new}).axes
    heights = [patch.get_height() for patch in ax.patches]
    assert heights == pytest.approx([1, 2, 3, 4, 2, 4, 6, 8])  # ms: the 1,024-token row is left out
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["old", "new"]
    assert ax.get_yscale() == "log" and "32,768 tokens" in ax.get_ylabel()
    assert ax.get_title() == "The same benchmark on 2 machines"
    plt.close(ax.figure)
    (ax,) = plots.decode_benchmark_machines({"NumPy": old, "fused": new}, title="Two paths").axes
    assert ax.get_title() == "Two paths"
    with pytest.raises(ValueError, match=r"every run needs rows at context 32768, got \['new'\]"):
        plots.decode_benchmark_machines({"old": old, "new": [row("MHA", 1024, "1")]})


@pytest.mark.parametrize("streamed_ms, overlap", [
    (3.0, "0%"),  # the sum of 2 ms of bytes and 1 ms of products: loaded, then multiplied
    (2.0, "100%"),  # the larger of the two: the products hidden behind the bytes
    (2.5, "50%"),  # half of the shorter one hidden
    (1.5, "100%"),  # faster than either (noise): shown as full overlap, never above
])
def test_overlap_line(bench, streamed_ms, overlap):
    flops = 2 * 1_000_000
    numpy_row = {"context": 4096, "variant": "GQA-8", "path": "numpy", "macs": flops // 2, "kv_bytes": 2_000_000,
                 "median_s": 0.004}
    fused_row = numpy_row | {"path": "fused", "median_s": streamed_ms / 1e3}  # the fused step is its own streamed run
    roofs = {"read_bandwidth": 1e9, "products GQA-8": flops / 1e-3, "streamed GQA-8": flops / (streamed_ms / 1e3),
             "fused products GQA-8": flops / 1e-3}
    numpy_line, fused_line = bench.overlap_lines([numpy_row, fused_row], roofs)
    assert numpy_line == (f"loads and products, GQA-8 (numpy) at 4,096: bytes alone 2.0 ms, products in cache 1.0 ms, "
                          f"both streamed {streamed_ms:.1f} ms: overlap {overlap} (step 4.0 ms)")
    assert fused_line == (f"loads and products, GQA-8 (fused) at 4,096: bytes alone 2.0 ms, products in cache 1.0 ms, "
                          f"both streamed {streamed_ms:.1f} ms: overlap {overlap} (step {streamed_ms:.1f} ms)")


def test_overlap_rejects_times_that_are_not_positive():
    with pytest.raises(ValueError, match=r"^times must be positive, got 1\.0, 0\.0 and 2\.0$"):
        roofline.overlap(1.0, 0.0, 2.0)


# ---------------------------------------------------------------------------------------------
# The host on record (benchmarks/host.py) and the peer (benchmarks/peer.py)
# ---------------------------------------------------------------------------------------------

def load(name):
    """A fresh copy of ``benchmarks/<name>.py`` (the peer's test loads it again with torch blocked)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_blas_record_keeps_only_the_variables_that_steer_blas():
    host = load("host")
    environ = {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "1", "MKL_CBWR": "AVX2", "PATH": "/bin",
               "NVPL_BLAS_DEBUG_CPU_TYPE": "1", "GOTO_NUM_THREADS": "2"}
    record = host.blas_record(environ)
    assert record["blas_variables"] == {"GOTO_NUM_THREADS": "2", "MKL_CBWR": "AVX2", "OMP_NUM_THREADS": "1",
                                        "OPENBLAS_CORETYPE": "Haswell"}
    if importlib.util.find_spec("threadpoolctl") is not None:  # requirements-bench.txt
        assert {b["internal_api"] for b in record["blas_libraries"]} & {"openblas", "mkl", "blis"}
        assert all(set(b) == {"internal_api", "version", "architecture", "num_threads", "threading_layer"}
                   for b in record["blas_libraries"])


@pytest.mark.parametrize("variables, cpu_level, warned", [
    ({"OPENBLAS_CORETYPE": "Haswell"}, 3, "OPENBLAS_CORETYPE=Haswell forces AVX2 kernels on a CPU with AVX-512"),
    ({"OPENBLAS_CORETYPE": "Haswell"}, 2, None),  # what this CPU has anyway
    ({"OPENBLAS_CORETYPE": "prescott"}, 2, "OPENBLAS_CORETYPE=prescott forces SSE kernels on a CPU with AVX2"),
    ({"MKL_ENABLE_INSTRUCTIONS": "AVX"}, 2, "MKL_ENABLE_INSTRUCTIONS=AVX forces AVX kernels on a CPU with AVX2"),
    ({"OPENBLAS_CORETYPE": "SkylakeX"}, 2, None),  # newer than the CPU: OpenBLAS falls back on its own
    ({"OMP_NUM_THREADS": "1"}, 3, None),  # threads, not kernels
])
def test_blas_warnings_name_a_kernel_older_than_the_cpu(variables, cpu_level, warned):
    lines = load("host").blas_warnings(variables, cpu_level)
    assert lines == ([] if warned is None else [f"WARNING  {warned}: every BLAS product runs below what this CPU "
                                                 f"supports; unset it to measure this machine"])


def test_cpu_vector_level_from_flags():
    host = load("host")
    assert [host.cpu_vector_level(f) for f in ({"sse2"}, {"avx"}, {"avx", "avx2"}, {"avx", "avx2", "fma"},
                                               {"avx2", "fma", "avx512f"})] == [0, 1, 1, 2, 3]


def test_without_torch_the_peer_row_is_skipped(monkeypatch, bench):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    peer = load("peer")
    assert peer.MISSING.startswith("PyTorch is not installed (") and peer.version() is None
    assert bench.peer_lines({"peer_missing": peer.MISSING}) == [f"peer: PyTorch's sdpa row skipped: {peer.MISSING}"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed: no peer to check")
def test_peer_step_equals_the_reference():
    rng = np.random.default_rng(2)
    q, store = rng.standard_normal((8, 6), dtype=np.float32), rng.standard_normal((2, 30, 6), dtype=np.float32)
    out = load("peer").sdpa_step(q, store[:, :20], store[:, :20, :5], threads=1)().numpy()  # views, d_v != d_h
    expected = mk.decode_attention(q.astype(float), store[:, :20].astype(float), store[:, :20, :5].astype(float))
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-6)
