"""Claims of the kernel-engineer sections in gpu_kernels (MI300X peaks, block-scaled MMA), tensor_parallel (AllGather-GEMM) and mla_serving (an MXFP4 latent), recomputed by hand
(products written out), not read back from the notebooks."""
import pytest

import mha_kit as mk


def test_mi300x_fp8_gemm_speed_of_light():
    fp8, bw = 304 * 4096 * 2.1e9, 5.3e12  # ROCm MI300X table: CUs x FLOPs/clock/CU x clock
    assert fp8 == pytest.approx(mk.AMD_GPUS["mi300x"].fp8_flops, rel=1e-4)
    t_compute = 2 * 1024 * 1536 * 7168 / fp8
    t_memory = (1024 * 7168 + 1536 * 7168 + 2 * 1024 * 1536) / bw
    assert round(t_compute * 1e6, 1) == 8.6 and round(t_memory * 1e6, 1) == 4.1  # compute-bound, task: 8.63
    assert 2 * 1024 * 7168 * 256 / fp8 < (1024 * 256 + 7168 * 256 + 2 * 1024 * 7168) / bw  # K = 256: memory
    assert round((1024 * 256 + 7168 * 256 + 2 * 1024 * 7168) / bw * 1e6, 2) == 3.17  # the task's 3.17 us


def test_nvfp4_gemm_on_b200_is_memory_bound_near_the_tasks_9_us():
    m, n, k = 128, 7168, 16384
    bytes_moved = (m * k + n * k) // 2 + (m * k + n * k) // 16 + 2 * m * n  # E2M1, E4M3 per 16, fp16 out
    t_memory = bytes_moved / 7.7e12
    t_compute = 2 * m * n * k / (4 * 2.25e15)
    assert round(bytes_moved / 1e6, 1) == 69.1 and t_compute < t_memory
    assert t_memory * 1e6 == pytest.approx(8.994, abs=0.05)  # the task's speed of light at 1.5 GHz


def test_mxfp4_latent_bytes():
    assert mk.mx_bytes(576) == 576 // 2 + 576 // 32 == 306  # whole row in MXFP4
    assert mk.mx_bytes(512) + 64 * 2 == 512 // 2 + 512 // 32 + 64 * 2 == 400  # rotary key in bf16
    assert 576 * 2 / mk.mx_bytes(576) == pytest.approx(3.76, abs=0.01)  # against the bf16 row


def test_ag_gemm_hides_the_all_gather_for_llama_70b():
    d, ffn, tokens = 8192, 2 * 28672, 8192
    compute = 2 * tokens * d * (ffn // 8) / 989e12
    comm = 7 * (tokens // 8) * d * 2 / 450e9
    k, c = compute / 8, comm / 7
    assert c < k  # each shard arrives before the previous chunk's GEMM ends
    assert mk.chunked_overlap_time(compute, comm, 8)[1] == pytest.approx(8 * k)
    assert round(compute * 1e6) == 973 and round(comm * 1e6) == 261
