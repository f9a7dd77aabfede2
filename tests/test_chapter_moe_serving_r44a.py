"""Section moe_serving-expert-choice of "Mixture-of-experts serving".

Token-choice top 2 against expert choice (capacity n c / E = 16) on the chapter's seeded router logits, 64 tokens
and 8 experts: recomputed with a plain-Python softmax and sort (no mk), including the experts-per-token counts and
the tokens whose experts move when their 63 batch-mates are redrawn.
"""
import math

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("moe_serving")
LABEL = "moe_serving-expert-choice"
MARKER = "def expert_choice("
N, E, K, CF = 64, 8, 2, 2.0
BIB = (chapter_outputs.BOOK.parent / "references.bib").read_text(encoding="utf-8")


def softmax_rows(logits):
    out = []
    for row in logits:
        m = max(row)
        e = [math.exp(v - m) for v in row]
        out.append([v / sum(e) for v in e])
    return out


def token_choice(logits, k=K):  # each token's k best experts (ties to the lower index)
    return [sorted(range(E), key=lambda e: (-row[e], e))[:k] for row in softmax_rows(logits)]


def expert_choice(logits, capacity):  # each expert's `capacity` best tokens, Zhou et al.'s TopK(S^T, k)
    s = softmax_rows(logits)
    return [sorted(range(len(s)), key=lambda t: (-s[t][e], t))[:capacity] for e in range(E)]


def experts_of(chosen, t):
    return [e for e in range(E) if t in chosen[e]]


def chapter_batch():
    rng = np.random.default_rng(11)
    favour = rng.normal(0.0, 0.5, E)
    return (rng.normal(0.0, 1.0, (N, E)) + favour).tolist(), favour


def test_capacity_and_loads():
    cap = int(N * CF / E)
    assert cap == 16 and cap * E == N * K  # the same 128 assignments as top 2
    logits, _ = chapter_batch()
    tc_load = [sum(e in ch for ch in token_choice(logits)) for e in range(E)]
    ec = expert_choice(logits, cap)
    assert [len(set(col)) for col in ec] == [cap] * E
    per_token = [len(experts_of(ec, t)) for t in range(N)]
    hist = [per_token.count(0), per_token.count(1), per_token.count(2), sum(p >= 3 for p in per_token)]
    assert sum(hist) == N and sum(per_token) == N * K
    ratio = max(tc_load) / (sum(tc_load) / E)
    out = chapter_outputs.printed(NB, MARKER)
    assert f"tokens per expert {tc_load}, busiest / mean = {ratio:.2f}" in out
    assert f"tokens per expert {[cap] * E}, busiest / mean = 1.00" in out
    assert f"tokens with 0, 1, 2, 3+ experts: {hist}; mean 2.0 experts a token" in out
    assert chapter_outputs.glued(NB, "ec_tc_ratio") == f"{ratio:.2f}"
    assert chapter_outputs.glued(NB, "ec_zero") == str(hist[0]) and chapter_outputs.glued(NB, "ec_three") == str(hist[3])
    assert ratio > 1.5 and hist[0] >= 1  # token choice is skewed; expert choice leaves a token with no expert


def test_batch_dependence():
    logits, favour = chapter_batch()
    cap = 16
    base_ec, base_tc = expert_choice(logits, cap), token_choice(logits)
    rng = np.random.default_rng(12)
    ec_changed, tc_changed, example = set(), set(), None
    for _ in range(5):
        others = (rng.normal(0.0, 1.0, (N, E)) + favour).tolist()
        for t in range(N):
            batch = [row if i != t else logits[t] for i, row in enumerate(others)]
            now = experts_of(expert_choice(batch, cap), t)
            if now != experts_of(base_ec, t):
                ec_changed.add(t)
                example = example or (t, experts_of(base_ec, t), now)
            if sorted(token_choice([logits[t]])[0]) != sorted(base_tc[t]):
                tc_changed.add(t)
    assert not tc_changed  # token choice reads only the token itself
    out = chapter_outputs.printed(NB, MARKER)
    t0, before, after = example
    assert f"token {t0}: experts {before} in this batch, {after} after its 63 batch-mates were redrawn" in out
    assert f"expert choice {len(ec_changed)} of {N}, token choice 0 of {N}" in out
    assert chapter_outputs.glued(NB, "ec_changed") == str(len(ec_changed)) and len(ec_changed) > N // 2


def test_section_placement_cites_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="moe_serving-router")
    sources = ["".join(c["source"]) for c in NB["cells"]]
    balance = next(i for i, s in enumerate(sources) if s.startswith("(moe_serving-load-balance)="))
    here = next(i for i, s in enumerate(sources) if s.startswith(f"({LABEL})="))
    router = next(i for i, s in enumerate(sources) if s.startswith("(moe_serving-router)="))
    assert balance < here < router and sources[here].split("\n")[1].startswith("### ")
    for ref in ("moe_serving-aux-loss", "moe_serving-aux-free", "moe_serving-eplb", "moe_serving-capacity"):
        assert f"{{ref}}`{ref}`" in text, ref
    for cite in ("zhou2022expertchoice{Abstract}", "flaxformerexpertchoice{ExpertsChooseMaskedRouter}",
                 "jiang2024mixtral{§2.1}", "hfmoerouters{load_balancing_loss_func}", "deepseekv3{§2.1.2; §4.2}",
                 "expertthreshold2026{Abstract}", "he2025nondeterminism"):
        assert cite in text, cite
        assert f"{{{cite.split('{')[0]}," in BIB
    assert "{admonition} In the interview" in text and text.count(":class: dropdown") == 3


def test_review_ceec_wording():
    text = chapter_outputs.section(NB, LABEL, end="moe_serving-router")
    assert "why decoder LLMs do not use it" not in text and "production decoder LLMs do not use it" in text
    assert "dropless token choice" in text and "exponential moving average" in text
    assert "exactly 8 experts" in text and "is token choice again" not in text
    assert "`router_aux_loss_coef` $= 10^{-3}$" in text and "default router\\_aux\\_loss\\_coef = 0.001" in BIB
