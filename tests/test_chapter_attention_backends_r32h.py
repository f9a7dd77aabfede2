"""Section attention_backends-learned-bias of "Attention backends": the bytes of a learned attention bias and of its
gradient at B = 8, H = 32, L = S = 4,096 (a full (B, H, L, S) bias, a bias shared over the batch whose SDPA gradient
is still written at the expanded shape, and a per-head, per-distance table of 2 * 4096 - 1 entries), recomputed from
the shapes and the dtype sizes; and the table gradient the chapter prints, recomputed with the softmax's explicit
Jacobian (diag(p) - p p^T) and a central finite difference instead of the chapter's closed form and forward one."""
import pathlib
import re

import numpy as np
import pytest

import chapter_outputs

NB = chapter_outputs.notebook("attention_backends")
LABEL = "attention_backends-learned-bias"
B, H, L = 8, 32, 4096
FULL = B * H * L * L
HEAD = H * L * L
TABLE = H * (2 * L - 1)


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_entry_counts_exactly():
    assert FULL == 4_294_967_296 and HEAD == 536_870_912 and TABLE == 262_112
    printed = chapter_outputs.printed(NB, "sdpa_grad = B * H * L * L")
    counts = [int(m.replace(",", "")) for m in re.findall(r"\s([\d,]{7,}) entries", printed)]
    assert counts == [FULL, HEAD, TABLE]
    assert glued("lb_table_entries") == f"{TABLE:,}"
    assert glued("lb_ratio") == f"{FULL // TABLE:,}" == "16,386"


@pytest.mark.parametrize("key, n_bytes, text", [
    ("lb_full_bf16", 2 * FULL, "8 GiB"),  # the full bias in bf16: 2**33 bytes
    ("lb_full_fp32", 4 * FULL, "16 GiB"),
    ("lb_pair_bf16", 4 * FULL, "16 GiB"),  # bias plus its gradient, both bf16
    ("lb_head_bf16", 2 * HEAD, "1 GiB"),
])
def test_gib_values(key, n_bytes, text):
    assert n_bytes % 2**30 == 0 and f"{n_bytes // 2**30} GiB" == text == glued(key)


def test_table_kib_and_the_sdpa_gradient_of_a_shared_bias():
    assert glued("lb_table_bf16") == f"{2 * TABLE / 1024:.1f} KiB" == "511.9 KiB"
    printed = chapter_outputs.printed(NB, "sdpa_grad = B * H * L * L").splitlines()
    head_line = next(line for line in printed if line.startswith("head bias"))
    assert head_line.endswith("gradient buffer 8 GiB in bf16")  # expanded to (B, H, L, S) before the call


def _table_gradient(entry):
    rng = np.random.default_rng(5)
    h, n, d_h = 2, 8, 4
    q, k, v, d_out = rng.normal(size=(4, h, n, d_h))
    table = rng.normal(size=(h, 2 * n - 1))

    def loss(tbl):
        total = 0.0
        for head in range(h):
            for i in range(n):
                s = np.array([q[head, i] @ k[head, j] / np.sqrt(d_h) + tbl[head, i - j + n - 1] for j in range(n)])
                p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                total += float((p @ v[head]) @ d_out[head, i])
        return total

    analytic = np.zeros_like(table)
    for head in range(h):
        for i in range(n):
            s = np.array([q[head, i] @ k[head, j] / np.sqrt(d_h) + table[head, i - j + n - 1] for j in range(n)])
            p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
            d_s = (np.diag(p) - np.outer(p, p)) @ (v[head] @ d_out[head, i])  # softmax Jacobian times dP row
            for j in range(n):
                analytic[head, i - j + n - 1] += d_s[j]
    eps = 1e-5
    up, down = table.copy(), table.copy()
    up[entry] += eps
    down[entry] -= eps
    return analytic, (loss(up) - loss(down)) / (2 * eps)


def test_table_gradient_is_the_diagonal_sum():
    analytic, central = _table_gradient((1, 8))  # head 1, offset i - j = 1
    assert abs(analytic[1, 8] - central) < 1e-7
    assert abs(analytic.sum()) < 1e-12  # each softmax row's gradient sums to zero
    printed = chapter_outputs.printed(NB, "np.add.at(d_table")
    values = [float(x) for x in re.findall(r"(-?\d+\.\d{6})", printed)]
    assert len(values) == 2 and all(abs(x - analytic[1, 8]) < 5e-7 for x in values)
    assert printed.strip().endswith("match: True")


def test_section_form_and_citations():
    section = chapter_outputs.section(NB, LABEL, kinds=("markdown",))
    assert section.startswith(f"({LABEL})=\n### ")
    assert section.count(":class: dropdown\n") == 2 and "followup" not in section
    assert ":class: tip" in section
    bib = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
    for key in ("torch213sdpabias", "pytorchsdpapreprocess", "qa_pytorch_jax_memory"):
        assert key in section and "{" + key + "," in bib
    for key in re.findall(r"\{glue:text\}`(\w+)`", section):
        assert glued(key)
    # review 32: the forum asker's bias is broadcast and needs no gradient; the table gather copies
    assert "Adapted from a forum question" in section and "*learned* bias" in section
    assert "the indexing copies" in section and "Expanding is free" not in section
    assert "raffel2020t5{§2.1}" in section and "{raffel2020t5," in bib


def test_the_distance_gather_cannot_be_a_view():
    """The (H, L, S) bias gathered from an (H, 2L - 1) table: a view would need stride -1 along the key axis
    (bias[h, i, j + 1] = table[h, i - j - 1 + L - 1]), which numpy can express but PyTorch cannot, so the
    forward copy is H * L * S entries, what lb_head_bf16 glues in bf16."""
    h, n = 2, 5
    table = np.arange(h * (2 * n - 1)).reshape(h, 2 * n - 1)
    offset = np.arange(n)[:, None] - np.arange(n)[None, :] + n - 1
    gathered = table[:, offset]
    assert not np.shares_memory(gathered, table)
    assert np.all(np.diff(offset, axis=1) == -1)  # column index falls by one per key: a negative stride
    assert glued("lb_head_bf16") == "1 GiB" and 2 * H * L * L == 2**30
