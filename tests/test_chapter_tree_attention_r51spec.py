"""Section tree_attention-eagle2-tree-size: how many candidates EAGLE-2's expansion scores, how many it verifies.

Recomputes, from the rule in the authors' topK_genrate (the root's top k, then depth passes of k frontier nodes with
k children each, then the top m - 1 of all drafted tokens plus the root), the candidates scored (k + depth k^2), the
levels (depth + 1), the full k-ary tree of that depth, the draft passes and the longest accepted run
(min(depth + 1, m - 1) + 1), for the repository's settings, and compares them with the printed table and the glue.
"""
import re

import chapter_outputs

NB = chapter_outputs.notebook("tree_attention")
LABEL = "tree_attention-eagle2-tree-size"
SETTINGS = [("gen_ea_answer_vicuna.py", 10, 5, 60), ("from_pretrained, EAGLE-3", 10, 7, 60),
            ("cnets1.Model defaults", 8, 5, 63), ("budget below depth", 4, 5, 4)]


def counts(k, depth, m):
    scored, frontier = k, 1
    for _ in range(depth):  # each pass: k frontier nodes, k children each
        scored += k * k
    full, level = 0, 1
    for _ in range(depth + 1):
        level *= k
        full += level
    longest = depth + 1 if m - 1 >= depth + 1 else m - 1
    return depth + 1, scored, full, 1 + depth, longest + 1, frontier


def test_table():
    text = chapter_outputs.printed(NB, "def eagle2_tree(")
    for name, k, depth, m in SETTINGS:
        levels, scored, full, passes, most, _ = counts(k, depth, m)
        row = next(line for line in text.splitlines() if line.startswith(name))
        cols = row[len(name):].split()
        assert [int(c.replace(",", "")) for c in cols[:8]] == [k, depth, m, levels, scored, full, passes, most]
        assert cols[8] == "True"  # the kept set is connected
        assert 1 <= int(cols[9]) <= min(levels, m - 1)
    assert counts(10, 5, 60)[1] == 510 and counts(10, 5, 60)[4] == 7


def test_glued():
    g = chapter_outputs.cell_glue(NB, "def eagle2_tree(")
    assert g == {"ta_e2_scored": "510", "ta_e2_kept": "59", "ta_e2_levels": "6", "ta_e2_max": "7",
                 "ta_e2_passes": str(counts(10, 5, 60)[3]), "ta_e2_drafts": str(counts(10, 5, 60)[4] - 1),
                 "ta_e2_full": "1,111,110", "ta_e2_small_max": "4"}


def test_prose_citations_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="tree_attention-cascade", kinds=("markdown",))
    assert text.startswith(f"({LABEL})=\n### ")
    chapter_outputs.assert_cited(text, ["eaglecodecb7e084", "li2024eagle2"])
    # EAGLE-2's head is cnets1.Model (use_eagle3=False); cnets.py is EAGLE-3's
    assert "cnets1.py l. 673-822" in text and "cnets.py l. 670-827" in text and "cnets.py l. 670-770" not in text
    assert "cnets1.py l. 473" in text and "ea_model.py l. 89-96" in text and "l. 322-337, 373-374" in text
    assert "Section 4" in text and "root included" in text
    chapter_outputs.assert_links(text, ["tree_attention-mask", "tree_attention-acceptance-length",
                                        "speculative_decoding-eagle-metrics"])
    flat = " ".join(text.split())
    for phrase in ("$k + \\text{depth}\\cdot k^2$", "$\\min(\\text{depth} + 1,\\; m - 1)$", "`total_tokens = total_token - 1`",
                   "10 + 5 x 100 = {glue:text}`ta_e2_scored`", "{glue:text}`ta_e2_drafts` drafts"):
        assert phrase in flat, phrase
    assert "In the interview" in text and text.count(":class: dropdown") == 1
    assert text.count("**Strong answer.**") == 1 and text.count("**Trap.**") == 1
    assert re.search(r"@misc\{eaglecodecb7e084,[^@]*cb7e0841fe0c206c6ed74a197ad5e2a1f13f5a2b[^@]*cnets1\.py l\. 673-822",
                     chapter_outputs.bibliography())
