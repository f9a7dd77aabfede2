"""Section attention_backends-pytorch-sdpa of "Attention backends": which backend PyTorch's
scaled_dot_product_attention picks for ten calls, recomputed from the filters of sdp_utils.cpp / sdp_utils_cpp.cpp
(PyTorch main, read December 2026) written here as one predicate per backend, independently of the chapter's
SDPA_RULES table, and compared with the lines the chapter printed; and the forced-flash cell (the global switch
reads True without a GPU, a flash-only call that flash refuses raises instead of falling back to math)."""
import re

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("attention_backends")
LABEL = "attention_backends-pytorch-sdpa"
CC = {"V100": (7, 0), "T4": (7, 5), "A100": (8, 0), "H100": (9, 0)}


def flash_ok(cc, dtype, d, mask, causal, n_q, n_k, dropout):
    # check_flash_attention_hardware_support [sm80, sm121]; check_dtypes_low_precision; check_for_attn_mask;
    # check_head_dim_size_flash (<= 256); check_flash_causal_non_square_seqlens; dropout is not filtered
    return (8, 0) <= cc <= (12, 1) and dtype in ("fp16", "bf16") and not mask and d <= 256 and not (causal and n_q != n_k)


def efficient_ok(cc, dtype, d, mask, causal, n_q, n_k, dropout):
    # [sm50, sm121]; {half, float} below sm80, plus bf16 from sm80; minimum_gemm_alignment: 16-bit with tensor
    # cores -> 128 / 16 = 8; fp32 on sm80+ -> max(4, 128 / 32) = 4; fp32 below sm80 -> 1; no attn_mask filter
    dtypes = ("fp16", "fp32", "bf16") if cc >= (8, 0) else ("fp16", "fp32")
    align = 8 if dtype in ("fp16", "bf16") else (4 if cc >= (8, 0) else 1)
    return (5, 0) <= cc <= (12, 1) and dtype in dtypes and d % align == 0


def cudnn_ok(cc, dtype, d, mask, causal, n_q, n_k, dropout):
    # [sm80, sm121]; fp16/bf16; head_dim <= 128 and a multiple of 8; dropout in steps of 1/16; s_k != 1
    return ((8, 0) <= cc <= (12, 1) and dtype in ("fp16", "bf16") and d <= 128 and d % 8 == 0
            and (dropout * 16).is_integer() and n_k != 1)


def cpu_flash_ok(dtype, d, mask, causal, n_q, n_k, dropout):
    # use_flash_attention_cpp: check_for_dropout, dtypes {float, double, bf16, half}, a mask of a legal shape
    return dropout == 0 and dtype in ("fp32", "fp64", "bf16", "fp16")


CUDA_DEFAULT = [("FLASH_ATTENTION", flash_ok), ("EFFICIENT_ATTENTION", efficient_ok), ("MATH", None)]
CUDNN_FIRST = [("CUDNN_ATTENTION", cudnn_ok)] + CUDA_DEFAULT


def choose(device, order_name, dtype, d, mask=False, causal=False, n_q=1, n_k=1, dropout=0.0):
    if device == "cpu":
        return "CPU_FLASH" if cpu_flash_ok(dtype, d, mask, causal, n_q, n_k, dropout) else "MATH"
    order = CUDNN_FIRST if "cuDNN" in order_name else CUDA_DEFAULT
    for name, ok in order:
        if ok is None or ok(CC[device], dtype, d, mask, causal, n_q, n_k, dropout):
            return name


CASES = [  # (label as printed, device, order, call, expected) -- the expected column written out by hand
    ("A100 bf16, causal prefill 2048", "A100", "cuda", dict(dtype="bf16", d=128, causal=True, n_q=2048, n_k=2048),
     "FLASH_ATTENTION"),
    ("A100 fp32, causal prefill 2048", "A100", "cuda", dict(dtype="fp32", d=128, causal=True, n_q=2048, n_k=2048),
     "EFFICIENT_ATTENTION"),
    ("A100 bf16, padding mask", "A100", "cuda", dict(dtype="bf16", d=128, mask=True, n_q=2048, n_k=2048),
     "EFFICIENT_ATTENTION"),
    ("A100 bf16, is_causal, 1 query, 2048 keys", "A100", "cuda", dict(dtype="bf16", d=128, causal=True, n_k=2048),
     "EFFICIENT_ATTENTION"),
    ("A100 bf16, head_dim 512", "A100", "cuda", dict(dtype="bf16", d=512, causal=True, n_q=2048, n_k=2048),
     "EFFICIENT_ATTENTION"),
    ("T4 fp16, causal prefill", "T4", "cuda", dict(dtype="fp16", d=128, causal=True, n_q=2048, n_k=2048),
     "EFFICIENT_ATTENTION"),
    ("V100 bf16, causal prefill", "V100", "cuda", dict(dtype="bf16", d=128, causal=True, n_q=2048, n_k=2048), "MATH"),
    ("H100 bf16, causal, cuDNN first", "H100", "cuda, cuDNN first",
     dict(dtype="bf16", d=128, causal=True, n_q=2048, n_k=2048), "CUDNN_ATTENTION"),
    ("CPU fp32, padding mask", "cpu", "cpu", dict(dtype="fp32", d=128, mask=True, n_q=512, n_k=512), "CPU_FLASH"),
    ("CPU fp32, dropout 0.1 (training)", "cpu", "cpu", dict(dtype="fp32", d=128, n_q=512, n_k=512, dropout=0.1),
     "MATH"),
]


def _printed_choices():
    text = chapter_outputs.printed(NB, "CALLS = {")
    return dict(re.findall(r"^(.+?)\s+-> (\S+)", text, flags=re.M))


@pytest.mark.parametrize("label, device, order, call, expected", CASES, ids=[c[0] for c in CASES])
def test_backend_choice(label, device, order, call, expected):
    assert choose(device, order, **call) == expected
    assert _printed_choices()[label] == expected


def test_every_printed_row_is_checked():
    assert set(_printed_choices()) == {c[0] for c in CASES}


def test_forced_flash_and_the_global_switch():
    text = chapter_outputs.printed(NB, "only FLASH_ATTENTION")
    assert "flash_sdp_enabled() on a machine without a GPU: True" in text
    assert "only FLASH_ATTENTION, A100 bf16, causal prefill 2048: FLASH_ATTENTION" in text
    # flash refuses fp32, and with math switched off select_sdp_backend raises
    assert not flash_ok((8, 0), "fp32", 128, False, True, 2048, 2048, 0.0)
    assert "only FLASH_ATTENTION, A100 fp32, causal prefill 2048: RuntimeError: No available kernel" in text
    assert chapter_outputs.glued(NB, "sdpa_decode_choice") == "EFFICIENT_ATTENTION"


def test_decode_is_causal_keeps_only_key_zero():
    # PyTorch's is_causal is the upper-left mask tril(ones(L, S)); recount it for L = 1, S = 2048 by hand
    n_q, n_k = 1, 2048
    top_left = sum(1 for i in range(n_q) for j in range(n_k) if j <= i)
    bottom_right = sum(1 for i in range(n_q) for j in range(n_k) if j <= i + n_k - n_q)
    assert (top_left, bottom_right) == (1, 2048)
    assert chapter_outputs.glued(NB, "sdpa_decode_keys_kept") == str(top_left)
    assert chapter_outputs.glued(NB, "sdpa_decode_keys_total") == f"{n_k:,}"
    text = chapter_outputs.section(NB, LABEL)
    assert "Why is it slower?" not in text
    assert "What happens?" in text and "causal_lower_right" in text


def test_the_section_cites_the_source_and_the_docs():
    text = chapter_outputs.section(NB, LABEL)
    for key in ("pytorchsdputils", "pytorchsdpakernel", "pytorchcpuflash", "pytorchcausalvariant"):
        assert f"{{cite:p}}`{key}{{" in text
    assert "import torch" not in text
