"""Section scheduler_design-recompute-vs-swap-20pct of "Scheduling and cache policy".

The PagedAttention paper's "recompute never above 1.2x swap" against a copy-count model of swapping: OPT-13B
(metaseq MODEL_SIZES["13b"]: 40 layers, d 5120, 40 heads of 128, MLP of two d x 4d matrices) on an A100 (312
TFLOPS, 1,555 GB/s) over PCIe 4.0 x16 (32 GB/s each way), an assumed 5 us per copy, one copy per block per layer
for K and for V; and the 30K-token case of Llama 3 70B on four H100s over PCIe Gen5 (64 GB/s). Recomputed here
from those constants, not through the chapter's functions, and compared with the stored outputs.
"""
import math

import pytest
import chapter_outputs

L, D, FFN = 40, 5120, 4 * 5120  # OPT-13B
A100_FLOPS, A100_HBM, GEN4, TAU = 312e12, 1.555e12, 32e9, 5e-6
H100_FLOPS, GEN5 = 989e12, 64e9
N = 512
BLOCKS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# Llama 3 8B (config.json): 32 layers, d 4096, 32 query heads and 8 KV heads of 128, d_ff 14336, vocabulary 128256
L8, D8, H8, KV8, HD8, FF8, V8 = 32, 4096, 32, 8, 128, 14_336, 128_256


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("scheduler_design")


def g(nb, key):
    return chapter_outputs.glued(nb, key)


def recompute(n):
    per_token = L * 12 * D * D  # QKVO 4 d^2 and MLP 8 d^2 per layer
    flops = 2 * n * per_token + L * 2 * D * n * (n + 1)  # causal scores and mix: 2 h d_h n (n + 1) per layer
    return max((2 * per_token + n * 2 * L * D * 2) / A100_HBM, flops / A100_FLOPS), flops


def swap(n, block, layers=L, kv_width=D, link=GEN4, tau=TAU):
    copy_bytes = block * kv_width * 2
    copies = math.ceil(n / block) * layers * 2
    one = tau + copy_bytes / link
    return 2 * copies * one, copy_bytes / one


def test_block_size_table(nb):
    rec = recompute(N)[0]
    lines = chapter_outputs.printed(nb, "def opt_recompute_s(").splitlines()
    assert lines[0] == f"OPT-13B, 512 tokens: cache 400 MiB, recompute {1e3 * rec:.1f} ms at the tensor-core peak"
    for b, line in zip(BLOCKS, lines[2:11]):
        s, bw = swap(N, b)
        assert line.split() == [str(b), str(b * D * 2 // 1024), "KiB", f"{bw / 1e9:.1f}", "GB/s",
                                f"{1e3 * s:.1f}", "ms", f"{rec / s:.2f}x"]
        assert g(nb, f"sd_rs_ratio_{b}") == f"{rec / s:.2f}"


def test_the_model_has_the_papers_shape(nb):
    ratios = [float(g(nb, f"sd_rs_ratio_{b}")) for b in BLOCKS]
    assert ratios == sorted(ratios)  # recompute's relative cost rises as blocks grow
    assert ratios[BLOCKS.index(16)] < 1 < ratios[BLOCKS.index(32)]  # recompute wins up to 16, swap from 32
    assert all(0.75 < ratios[BLOCKS.index(b)] < 1.35 for b in (16, 32, 64))  # close from 16 to 64


def test_break_even_copy_cost_and_link_rate(nb):
    rec = recompute(N)[0]
    peak = 2 * N * L * 2 * D * 2 / GEN4
    tau = (rec - peak) / (2 * 2 * (N // 16) * L)
    assert g(nb, "sd_rs_tau_us") == f"{1e6 * tau:.1f}" == "3.0"
    assert swap(N, 16, tau=tau)[0] == pytest.approx(rec)
    bw12 = 2 * N * L * 2 * D * 2 / (rec / 1.2 - 2 * 2 * (N // 256) * L * TAU)
    assert g(nb, "sd_rs_bw12") == f"{bw12 / 1e9:.1f}"
    assert swap(N, 256, link=bw12)[0] * 1.2 == pytest.approx(rec)
    assert g(nb, "sd_rs_peak_ratio") == f"{rec / peak:.2f}"


def test_prefill_at_sixty_percent_of_peak(nb):
    rec60 = recompute(N)[0] / 0.6  # compute-bound at 512 tokens, so 60% of peak stretches the whole prefill
    peak = 2 * N * L * 2 * D * 2 / GEN4
    assert g(nb, "sd_rs_rec60_ms") == f"{1e3 * rec60:.1f}" == "69.4"
    assert g(nb, "sd_rs_ratio256_60") == f"{rec60 / swap(N, 256)[0]:.2f}" == "2.50"
    tau60 = (rec60 - peak) / (2 * 2 * (N // 16) * L)
    assert g(nb, "sd_rs_tau60_us") == f"{1e6 * tau60:.1f}" == "8.4"
    assert swap(N, 16, tau=tau60)[0] == pytest.approx(rec60)
    bw = 2 * N * L * 2 * D * 2 / (rec60 / 1.2 - 2 * 2 * (N // 256) * L * TAU)
    assert g(nb, "sd_rs_bw12_60") == f"{bw / 1e9:.1f}" == "14.9"
    assert swap(N, 256, link=bw)[0] * 1.2 == pytest.approx(rec60)
    assert float(g(nb, "sd_rs_bw12_60")) < float(g(nb, "sd_rs_bw12"))  # a slower prefill needs slower copies


@pytest.mark.parametrize("n", [256, 2048])
def test_length_barely_moves_the_ratio(nb, n):
    rec, flops = recompute(n)
    assert g(nb, f"sd_rs_attn_{n}") == f"{100 * L * 2 * D * n * (n + 1) / flops:.1f}"
    assert g(nb, f"sd_rs_len_{n}") == f"{rec / swap(n, 16)[0]:.2f}"


def test_cache_bytes_and_flops_per_byte(nb):
    assert g(nb, "sd_rs_opt_tok") == f"{2 * L * D * 2:,}" == "819,200"
    assert g(nb, "sd_rs_llama_tok") == f"{2 * L8 * KV8 * HD8 * 2:,}" == "131,072"
    assert g(nb, "sd_rs_opt_fpb") == f"{recompute(N)[1] / (N * 2 * L * D * 2):,.0f}"
    qkvo = 2 * D8 * H8 * HD8 + 2 * D8 * KV8 * HD8
    flops8 = 2 * N * L8 * (qkvo + 3 * D8 * FF8) + 2 * V8 * D8 + L8 * 2 * H8 * HD8 * N * (N + 1)
    assert g(nb, "sd_rs_llama_fpb") == f"{flops8 / (N * 2 * L8 * KV8 * HD8 * 2):,.0f}"
    assert g(nb, "sd_rs_a100_fpl") == "9,750" and g(nb, "sd_rs_h100_fpl") == f"{H100_FLOPS / GEN5:,.0f}"


def test_thirty_thousand_tokens(nb):
    rec = float(g(nb, "sd_rs70_rec"))
    assert g(nb, "sd_rs70_rec") == chapter_outputs.glued(chapter_outputs.notebook("serving_operations"),
                                                          "so_lo_recompute_s")  # the long-output section's floor
    width = (8 // 4) * 128  # Llama 3 70B: 8 KV heads of 128, two per GPU at TP = 4
    for key, block, tau in (("16", 16, TAU), ("256", 256, TAU), ("peak", 256, 0.0)):
        s = swap(30_000, block, layers=80, kv_width=width, link=GEN5, tau=tau)[0]
        assert g(nb, f"sd_rs70_swap_{key}") == f"{s:.2f}"
    assert float(g(nb, "sd_rs70_swap_16")) > rec > 5 * float(g(nb, "sd_rs70_swap_256"))  # the flip needs big copies


def test_section_follows_preemption_and_links_what_it_uses(nb):
    labels = [("".join(c["source"]).split(")=")[0][1:]) for c in nb["cells"]
              if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("(")]
    i = labels.index("scheduler_design-preemption")
    assert labels[i + 1] == "scheduler_design-recompute-vs-swap-20pct"
    text = chapter_outputs.section(nb, "scheduler_design-recompute-vs-swap-20pct", end="scheduler_design-v0-states")
    for ref in ("scheduler_design-preemption", "serving_operations-long-outputs", "scheduler_design-v0-states",
                "gpu_kernels-confirm-overlap"):
        assert f"{{ref}}`{ref}`" in text
    for key in ("kwon2023vllm{§7.3, Fig. 19}", "kwon2023vllm{§7.3}", "kwon2023vllm{§4.5}", "vllmissue13073",
                "vllmpr12recompute", "metaseqoptsizes"):
        assert key in text
    assert "at most 20%" in text and "contradicts" in text  # the literal reading named before the 1.2x one
    assert "The roofline above says the opposite" not in text  # both say swap wins; they differ in size
