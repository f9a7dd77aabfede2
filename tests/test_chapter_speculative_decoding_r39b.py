"""Section speculative_decoding-draft-cache-sync: the draft's cache when all k drafts are accepted (gpt-fast #107).

Recomputes the chapter's table from cache lengths alone, without the token lists the chapter keeps: the same
seeded acceptance draws (random.Random(1), each draft accepted with probability 0.8 until the first rejection),
then per step L -> L + a + 1 for the target; the draft, which ran on x_0 ... x_{k-1} only, holds
min(L + k, L + a + 1) before gpt-fast's extra run on x_k and L + a + 1 after it. Checks the printed rows, the
glued counts, the citations with their locators, the bibliography entries and the boxes.
"""
import random
import re

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("speculative_decoding")
BIB = (chapter_outputs.BOOK.parent / "references.bib").read_text()
K, PROMPT, STEPS, ALPHA, SEED = 4, 12, 8, 0.8, 1
LABEL = "speculative_decoding-draft-cache-sync"


def simulate():
    rng = random.Random(SEED)
    length, rows, lacking = PROMPT, [], 0  # entries both caches hold at the start of a step
    for step in range(1, STEPS + 1):
        wide = lacking  # the no-extra-run draft feeds what it lacks with x_0 in its first pass
        a = 0
        while a < K and rng.random() < ALPHA:
            a += 1
        draft_written = length + K  # k draft runs: inputs x_0 ... x_{k-1}
        target_written = length + K + 1  # the verification pass: x_0 ... x_k
        length += a + 1
        before = min(draft_written, length)
        assert target_written >= length and before in (length, length - 1)
        after = before + (a == K)  # gpt-fast's model_forward on draft_tokens[-1]
        lacking = length - before
        rows.append({"step": step, "accepted": a, "target": length, "before": before, "after": after,
                     "rows": 1 + lacking, "wide": wide})
    return rows


ROWS = simulate()
FULL = sum(r["accepted"] == K for r in ROWS)


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_table():
    text = chapter_outputs.printed(NB, "DCS_K, DCS_PROMPT, DCS_STEPS, DCS_ALPHA =")
    got = [tuple(map(int, m)) for m in re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", text, re.M)]
    want = [(r["step"], r["accepted"], r["target"], r["before"], r["after"], r["rows"]) for r in ROWS]
    assert got == want
    for r in ROWS:  # the invariant the section states
        assert r["after"] == r["target"]
        assert r["before"] == r["target"] - (r["accepted"] == K)
    assert ROWS[-1]["target"] == PROMPT + sum(r["accepted"] + 1 for r in ROWS)
    emitted = ROWS[-1]["target"] - PROMPT
    assert f"{STEPS} steps, {emitted} tokens cached after the prompt, {FULL} steps with all {K} accepted" in text
    wide = sum(r["rows"] == 2 for r in ROWS[:-1])  # first passes of steps 2 ... STEPS that carry x_k
    assert (f"draft runs: gpt-fast {STEPS * K + FULL} ({FULL} extra); feeding the entry next step {STEPS * K}, "
            f"of which {wide} first passes had 2 rows") in text


def test_glued():
    wide = sum(r["rows"] == 2 for r in ROWS[:-1])
    assert glued("sdcs_steps") == str(STEPS)
    assert glued("sdcs_full") == str(FULL)
    assert glued("sdcs_emitted") == str(ROWS[-1]["target"] - PROMPT)
    assert glued("sdcs_runs_gptfast") == str(STEPS * K + FULL)
    assert glued("sdcs_runs_next") == str(STEPS * K)
    assert glued("sdcs_wide") == str(wide)
    assert 2 <= FULL < STEPS and any(r["accepted"] == 0 for r in ROWS)  # the seed shows both cases
    p_full = 1.0
    for _ in range(K):  # P(all k accepted), multiplied out draft by draft
        p_full *= ALPHA
    assert glued("sdcs_pfull") == f"{p_full:.2f}" == "0.41"
    assert glued("sdcs_seed_rate") == f"{FULL / STEPS:.3f}"
    assert abs(FULL / STEPS - p_full) < 0.1  # the prose says the seed sits near the expectation
    assert glued("sdcs_vllm_rows") == str((K + 1) + 1)  # vLLM draft_model: the k + 1 verified tokens plus the new one
    text = chapter_outputs.printed(NB, "DCS_K, DCS_PROMPT, DCS_STEPS, DCS_ALPHA =")
    assert f"alpha^k = {p_full:.4f}: expected extra gpt-fast draft runs per step {p_full:.2f}" in text


@pytest.mark.parametrize("key", ["gptfastissue107", "gptfastgenerate", "vllmdraftmodelproposer", "vllmeagleproposer"])
def test_citations(key):
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-proposers", kinds=("markdown",))
    assert re.search(r"`" + key + r"\{[^}]+\}`", text), key  # cited with a locator
    assert re.search(r"@\w+\{" + key + ",", BIB), key


def test_prose_and_boxes():
    text = chapter_outputs.section(NB, LABEL, end="speculative_decoding-proposers", kinds=("markdown",))
    flat = " ".join(text.split())
    assert text.startswith(f"({LABEL})=\n### ")
    for phrase in ("fill last token into draft model", "model_forward(draft_model, draft_tokens[-1].view(1, -1), "
                   "orig_input_pos + speculate_k)", "one entry short", "copy bonus token",
                   "to prevent saves to the KV cache", "k_out[:, :, input_pos] = k_val", "lower acceptance rate",
                   "PADDING_SLOT_ID", "$k + 2$ query rows every step", "re-feeds the verified tokens",
                   "k + 2 rows", "setup_caches", "hypothetical minimal version", "commit 2037199",
                   "[a1, b1, b2, c1, c2, c3] -> [b1, b2, c1, c2, c3, c3]",
                   "[b1, b2, c1, c2, c3, c3] -> [a2, b2, b3, c2, c3, c4]"):
        assert phrase in flat, phrase
    for label in ("speculative_decoding-cache", "speculative_decoding-verify", "speculative_decoding-walltime"):
        assert "{ref}`" + label + "`" in text, label
    assert "In the interview" in text and text.count(":class: dropdown") == 1
    assert text.count("**Strong answer.**") == 1 and text.count("**Trap.**") == 1
    assert "gptfastissue107" in BIB and "issues/107" in BIB
    for stale in ("feeds x_k together with the new token", "stale key and value from an earlier rejected draft",
                  "falls as more full acceptances pile up", "covers $x_k$ and the bonus together"):
        assert stale not in flat, stale  # the claims the cold review found wrong
