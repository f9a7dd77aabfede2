"""Section moe_serving-device-limited-v2 of "Mixture-of-experts serving": DeepSeek-V2's device-limited routing (a group
is worth its largest score) against DeepSeek-V3's node-limited routing (the sum of its two largest), recomputed with
plain loops over the same seeded draws: the 8-expert, 4-group example whose two rules keep different groups, and the
share of 512 tokens whose 6 experts differ at V2's shape (160 experts, 8 groups, 3 kept; config_236B.json)."""
import pathlib
import re

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("moe_serving")
LABEL = "moe_serving-device-limited-v2"
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")


def route(probs, num_groups, keep, top_k, rule):
    """Loop reading of the rule: (kept groups, chosen experts), both sorted."""
    size = len(probs) // num_groups
    worth = []
    for g in range(num_groups):
        members = sorted(probs[g * size:(g + 1) * size], reverse=True)
        worth.append(members[0] if rule == "max" else members[0] + members[1])
    groups = sorted(sorted(range(num_groups), key=lambda g: -worth[g])[:keep])
    eligible = [e for g in groups for e in range(g * size, (g + 1) * size)]
    return groups, sorted(sorted(eligible, key=lambda e: -probs[e])[:top_k])


def softmax(row):
    z = np.exp(row - row.max())
    return z / z.sum()


def draws():
    rng = np.random.default_rng(6)
    one = rng.normal(0.0, 1.0, (1, 8))
    many = rng.normal(0.0, 1.0, (512, 160))
    return one, many


def test_the_two_rules_keep_different_groups():
    one, _ = draws()
    p = softmax(one[0])
    v2, v3 = route(p, 4, 2, 2, "max"), route(p, 4, 2, 2, "top2")
    assert v2 == ([0, 3], [1, 7]) and v3 == ([0, 2], [1, 5])
    # group 3 has the larger single score, group 2 the larger top-2 sum
    assert max(p[6:8]) > max(p[4:6]) and sum(p[4:6]) > sum(p[6:8])
    printed = chapter_outputs.printed(NB, "def group_limited_topk(")
    assert f"groups {v2[0]}  experts {v2[1]}" in printed and f"groups {v3[0]}  experts {v3[1]}" in printed
    assert "mk.grouped_topk_gates (zero bias): True" in printed
    assert chapter_outputs.glued(NB, "dl_v2_experts") == str(v2[1])
    assert chapter_outputs.glued(NB, "dl_v3_experts") == str(v3[1])


def test_share_of_tokens_that_change_at_v2_shape():
    _, many = draws()
    differ = sum(route(softmax(row), 8, 3, 6, "max")[1] != route(softmax(row), 8, 3, 6, "top2")[1] for row in many)
    share = f"{differ / 512:.0%}"
    assert 0 < differ < 512
    assert chapter_outputs.glued(NB, "dl_differ") == share
    assert f"{share} of 512" in chapter_outputs.printed(NB, "logits_v2 = rng.normal")


def test_sources_and_form():
    section = chapter_outputs.section(NB, LABEL, kinds=("markdown",))
    assert section.startswith(f"({LABEL})=\n### ")
    assert section.count(":class: dropdown\n") == 2 and "followup" not in section
    for key in ("deepseekv2", "deepseekv3gatev2rule", "qa_huawei_device_limited"):
        assert key in section and "{" + key + "," in BIB
    assert "deepseekv2{§2.2.2}" in section and "deepseekv2{§3.1.2}" in section
    # review 32: the 4 comes from §4.2 and the config; the top-K is joint over the kept nodes
    assert "deepseekv3{§2.1.2, §4.2}" in section and "deepseekv3hfconfig{config.json}" in section
    hf = re.search(r"@misc\{deepseekv3hfconfig,.*?\n\}", BIB, re.S).group(0)
    assert "topk\\_group 4" in hf and "n\\_group 8" in hf
    assert "one good expert and one poor one" not in section and "jointly over all kept nodes" in section
    note = re.search(r"@misc\{deepseekv3gatev2rule,.*?\n\}", BIB, re.S).group(0)
    for fact in ("n_routed\\_experts 160", "n\\_activated\\_experts 6", "n\\_expert\\_groups 8", "n\\_limited\\_groups 3"):
        assert fact.replace("n_routed", "n\\_routed") in note
