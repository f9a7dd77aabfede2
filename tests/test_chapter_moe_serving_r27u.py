"""Sections moe_serving-ep-with-tp-attention and moe_serving-expert-collapse of "Mixture-of-experts serving".

EP beside tensor-parallel attention: the bytes each GPU moves per MoE layer for DeepSeek-V3 (hidden 7168, top 8 of
256 routed experts, bf16) under (a) an all-to-all with one copy per expert, (a') one copy per GPU reached, and (b) a
ring all-reduce of the (n, d) partial outputs, written out from the formulas (the chance that a GPU holds none of a
token's experts as a product of ratios, not a binomial quotient), compared with the table the chapter prints and the
values it glues; the ratio (a)/(b) is k/G.

Expert collapse: the toy router is run again with the chapter's stated rule and seed, written here with a row-wise
argsort and a bincount (the random draws are the input, consumed in the same order); the printed shares are compared,
and the collapse and the two fixes are asserted as properties. The Switch-loss gradient the chapter's rule uses,
-8 alpha P_i (f_i - sum_j f_j P_j), is checked against a finite difference of 8 sum_i f_i softmax(b)_i.
"""
import pathlib

import numpy as np

import chapter_outputs
import mha_kit as mk

NB = chapter_outputs.notebook("moe_serving")
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
D, K, E = 7168, 8, 256  # DeepSeek-V3 config.json: hidden_size, num_experts_per_tok, n_routed_experts
ROWS = ((8, 64), (8, 4096), (32, 4096), (64, 4096))


def glued(key):
    return chapter_outputs.glued(NB, key)


def bytes_per_gpu(gpus, n):
    a2a = 2 * (n / gpus) * K * (gpus - 1) / gpus * D * 2  # dispatch + combine, one bf16 copy per remote expert
    none_here = 1.0
    for j in range(K):  # a given remote GPU holds none of the token's k distinct experts
        none_here *= (E - E // gpus - j) / (E - j)
    once = 2 * (n / gpus) * (gpus - 1) * (1 - none_here) * D * 2
    ring = 2 * (gpus - 1) * (n * D // gpus) * 2  # reduce-scatter + all-gather of (n, d) bf16
    return a2a, once, ring


def test_model_constants_match_the_kit():
    v3 = mk.MODEL_FACTS["deepseek-v3"]
    assert (v3.config.d_model, v3.experts_per_token, v3.num_experts) == (D, K, E)


def test_ep_table():
    lines = chapter_outputs.printed(NB, "E_EP, K_EP, D_EP").splitlines()
    assert "(a)/(b)" in lines[0]
    for line, (gpus, n) in zip(lines[1:5], ROWS):
        a2a, once, ring = bytes_per_gpu(gpus, n)
        want = [str(gpus), f"{n:,}", mk.format_bytes(round(a2a)), mk.format_bytes(round(once)),
                mk.format_bytes(ring), mk.format_bytes(2 * ring), f"{a2a / ring:.3f}"]
        assert " ".join(line.split()) == " ".join(" ".join(want).split()), line
        assert abs(a2a / ring - K / gpus) < 1e-12  # the ratio is k / G
    assert lines[5].endswith("4,096 routed (either layout); 131,072 if every token ran through every local expert, 32x")


def test_ep_glue():
    a2a8, once8, ring8 = bytes_per_gpu(8, 4096)
    a2a32, _, ring32 = bytes_per_gpu(32, 4096)
    assert glued("eptp_ar_4096") == mk.format_bytes(ring8) == "98 MiB"
    assert glued("eptp_once_8") == f"{once8 / ring8:.0%}" == "66%"
    assert glued("eptp_ratio_32") == "0.25" == f"{K / 32:.2f}"
    assert glued("eptp_ar_64") == mk.format_bytes(bytes_per_gpu(8, 64)[2])
    assert glued("eptp_rows") == f"{4096 * K // 8:,}" and glued("eptp_naive") == str(E // K)


def switch_grad(b, f):
    p = np.exp(b - b.max())
    p /= p.sum()
    return len(b) * p * (f - f @ p)


def test_switch_gradient_by_finite_difference():
    rng = np.random.default_rng(0)
    b, f = rng.normal(0, 1, 8), rng.dirichlet(np.ones(8))

    def loss(x):
        p = np.exp(x) / np.exp(x).sum()
        return 8 * f @ p

    h = 1e-6
    numeric = np.array([(loss(b + h * np.eye(8)[i]) - loss(b - h * np.eye(8)[i])) / (2 * h) for i in range(8)])
    assert np.allclose(numeric, switch_grad(b, f), atol=1e-8)


def toy(alpha=0.0, gamma=0.0, steps=300):
    rng = np.random.default_rng(29)
    b, c, seen = rng.normal(0.0, 0.01, 8), np.zeros(8), np.zeros(8)
    for _ in range(steps):
        logits = b + c + rng.normal(0.0, 1.0, (1024, 8))
        counts = np.bincount(np.argsort(-logits, axis=1)[:, :2].ravel(), minlength=8).astype(float)  # top 2 a row
        f = counts / 2048
        seen += f / steps
        b = b + 2.0 * (f - 1 / 8)
        b = b - alpha * switch_grad(b, f)
        c = c - gamma * np.sign(f - 1 / 8)
    return np.sort(f)[::-1], np.sort(seen)[::-1]


def test_collapse_simulation():
    lines = chapter_outputs.printed(NB, "def collapse_run").splitlines()
    runs = {"no balancing": toy(), "aux loss, alpha = 1": toy(alpha=1.0), "aux loss, alpha = 4": toy(alpha=4.0),
            "bias, gamma = 0.05": toy(gamma=0.05)}
    assert len(lines) == 5
    for line, (label, (last, whole)) in zip(lines, runs.items()):
        want = (f"{label:<20} last step: {' '.join(f'{x:.2f}' for x in last)}  | whole run, top two "
                f"{whole[:2].sum():.0%}, least {whole[-1]:.1%}")
        assert line == want
    none, weak, strong, bias = (runs[k][0] for k in runs)
    assert none[:2].sum() > 0.99 and (none < 0.01).sum() == 6  # collapsed onto two experts
    assert (weak < 0.01).sum() >= 3  # a loss weaker than the feedback does not stop it
    assert strong.max() < 0.16 and bias.max() < 0.16  # both fixes keep the busiest near 1/8
    assert glued("col_none_top2") == f"{none[:2].sum():.0%}" == "100%"
    assert glued("col_none_least") == f"{runs['no balancing'][1][-1]:.1%}"
    assert glued("col_a1_dead") == str((weak < 0.01).sum())
    least_n = runs["no balancing"][1][-1] * 300 * 1024 * 2  # the least-used expert's assignments, whole run
    assert 1000 < least_n < 0.01 * 614_400  # barely trained, not untrained
    assert glued("col_none_least_n") == f"{least_n:,.0f}" and glued("col_all_n") == "614,400"
    assert lines[4] == f"no balancing: the least-used expert got {least_n:,.0f} of 614,400 assignments"
    assert glued("col_a4_max") == f"{strong[0]:.2f}" and glued("col_bias_max") == f"{bias[0]:.2f}"


def test_sections_cite_and_box():
    ep = chapter_outputs.section(NB, "moe_serving-ep-with-tp-attention", end="moe_serving-dispatch-latency")
    col = chapter_outputs.section(NB, "moe_serving-expert-collapse", end="moe_serving-aux-free")
    for section, keys in ((ep, ("trtllmepdoc", "trtllmissue989", "trtllma2aselect", "vllmneuronep", "hfexpertparallel")),
                          (col, ("shazeer2017outrageously", "moepytorchreimpl"))):
        assert "```{admonition} In the interview" in section and ":class: dropdown" in section
        for key in keys:
            assert f"{key}{{" in section, key
            assert f"{{{key}," in BIB, key
    for ref in ("tensor_parallel-dp-attention", "tensor_parallel-ep-layouts", "tensor_parallel-all-reduce",
                "moe_serving-dispatch-latency"):
        assert f"{{ref}}`{ref}`" in ep, ref
    for ref in ("moe_serving-aux-loss", "moe_serving-aux-free"):
        assert f"{{ref}}`{ref}`" in col, ref
    assert "### " in ep.splitlines()[1] and "### " in col.splitlines()[1]
    assert "enables it only when" not in ep and "TensorRT-LLM does exactly this" not in ep  # review cold32
    assert "further conditions" in ep and "{cite:p}`trtllmpytorch`" in ep
    assert "barely trained" in col and "never trained" not in col and "only the ratio" not in col
    for needle in ("zoph2022stmoe{", "deepseekv3{", "fedus2022switch{", "{ref}`moe_serving-capacity`",
                   "shazeer2017outrageously{Appendix A}", "no gradient"):
        assert needle in col, needle
