"""The decode benchmark on a CUDA GPU with PyTorch, against the GPU's own measured limits.

Same variants and table as ``decode_benchmark.py`` (MHA, GQA-8, MQA with 64 query heads of
128; MLA with DeepSeek-V2's latent), in bfloat16, contexts 1k to 128k. The attention step is
written the same way as mha_kit's decode path: the ``g`` queries of each KV head in one product.
On a GPU the ridge point is far higher than on a CPU, so MQA stays memory-bound.

    python -m benchmarks.gpu_decode            # needs torch with CUDA; says so and exits 0 otherwise

Optional and never run in CI: torch is not a requirement of this project.
Book: chapter "Measure it yourself".
"""
from __future__ import annotations

import argparse
import sys

from benchmarks import decode_benchmark as cpu  # the table, counts and summary

CONTEXTS = (1024, 4096, 16384, 32768, 131072)


def load_torch():
    """torch with a CUDA device, or None with the reason printed."""
    try:
        import torch
    except ImportError:
        print("gpu_decode: PyTorch is not installed; skipped (pip install torch on a machine with a GPU)")
        return None
    if not torch.cuda.is_available():
        print("gpu_decode: no CUDA GPU visible to PyTorch; skipped")
        return None
    return torch


def gpu_seconds(torch, func, repeats=20, warmup=3):
    """Median seconds of ``func()`` timed with CUDA events."""
    for _ in range(warmup):
        func()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        func()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def gpu_limits(torch):
    """(device-to-device copy bandwidth in bytes/s, bf16 GEMM FLOP/s): the best of a few runs."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    bandwidth = 2 * src.numel() / gpu_seconds(torch, lambda: dst.copy_(src))
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    return bandwidth, 2 * 8192**3 / gpu_seconds(torch, lambda: a @ a)


def decode_step(torch, cfg, s):
    """One decode step over ``s`` cached bf16 tokens, the g queries of a KV head in one product."""
    if cfg.variant == "mla":
        kv = torch.randn(1, s, cfg.kv_lora_rank + cfg.qk_rope_head_dim, dtype=torch.bfloat16, device="cuda")
        k, v = kv, kv[..., :cfg.kv_lora_rank]  # the value is a view of the key: read once
        q = torch.randn(1, cfg.num_heads, kv.shape[-1], dtype=torch.bfloat16, device="cuda")
    else:
        k, v = (torch.randn(cfg.num_kv_heads, s, cfg.head_dim, dtype=torch.bfloat16, device="cuda") for _ in "kv")
        q = torch.randn(cfg.num_kv_heads, cfg.group_size, cfg.head_dim, dtype=torch.bfloat16, device="cuda")
    scale = q.shape[-1] ** -0.5
    # (h_kv, g, d_h) @ (h_kv, d_h, s) -> (h_kv, g, s); softmax; @ (h_kv, s, d_v) -> (h_kv, g, d_v)
    return lambda: torch.softmax((q @ k.transpose(-1, -2)) * scale, dim=-1) @ v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS))
    args = p.parse_args(argv)
    torch = load_torch()
    if torch is None:
        return 0
    bandwidth, flop_rate = gpu_limits(torch)
    print(f"{torch.cuda.get_device_name()}: copy {bandwidth / 1e12:.2f} TB/s, bf16 GEMM {flop_rate / 1e12:.0f} TFLOP/s, "
          f"ridge point {flop_rate / bandwidth:.0f} FLOP/byte, torch {torch.__version__}")
    medians = {}
    for label, cfg in cpu.roofline.benchmark_variants().items():
        for s in args.contexts:
            medians[(label, s)] = gpu_seconds(torch, decode_step(torch, cfg, s))
            torch.cuda.empty_cache()
    rows = cpu.table_rows(medians, bandwidth, flop_rate, fmt="bf16")
    print(cpu.format_table(rows))
    print("\n".join(cpu.summary_lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
