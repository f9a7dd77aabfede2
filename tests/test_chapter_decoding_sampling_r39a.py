"""Section decoding_sampling-atomic-nondeterminism of "Decoding and sampling": atomics against batch variance.

The simulation is recomputed without np.cumsum: each launch's sum is a Python loop of scalar additions,
rounded to the accumulator's precision after every add (as an atomicAdd of one block's partial does), and
the greedy pick is a plain comparison. The prose is checked for the corrected claim of the section above
(a fixed order only where the reduction is fixed) and for the sources it rests on.
"""
import pathlib

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("decoding_sampling")
LABEL = "decoding_sampling-atomic-nondeterminism"
BLOCKS, LAUNCHES, SEED = 1024, 20, 232


def glued(key):
    return chapter_outputs.glued(NB, key)


def launches(dtype):
    """Per launch: the sum of the partials added one at a time in the launch's finishing order."""
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal(BLOCKS), rng.standard_normal(BLOCKS)
    partials = [dtype(x * y) for x, y in zip(a, b)]
    orders = [rng.permutation(BLOCKS) for _ in range(LAUNCHES)]
    sums = []
    for order in orders:
        acc = dtype(0)
        for i in order:
            acc = dtype(acc + partials[i])
        sums.append(float(acc))
    fixed = dtype(0)
    for p in partials:
        fixed = dtype(fixed + p)
    return sums, float(fixed)


def picks_a(sums, rival):  # argmax over [A, B] takes the first of a tie
    return sum(1 for s in sums if s >= rival)


def test_float32_launches_differ_and_flip_a_near_tie():
    sums, fixed = launches(np.float32)
    rival = float(np.median(sums))
    distinct, spread = len(set(sums)), max(sums) - min(sums)
    assert distinct > 1 and 0 < picks_a(sums, rival) < LAUNCHES  # the argmax changes between launches
    assert (str(distinct), f"{spread:.1e}", str(picks_a(sums, rival))) == \
        (glued("ds_atom_distinct"), glued("ds_atom_spread"), glued("ds_atom_picks"))
    row = next(line for line in chapter_outputs.printed(NB, "ds_atom_distinct").splitlines()
               if line.startswith("float32"))
    fixed_pick = picks_a([fixed] * LAUNCHES, rival)
    assert row.split() == ["float32", str(distinct), f"{spread:.1e}", str(picks_a(sums, rival)), "of", "20", "|",
                           "1", str(fixed_pick), "of", "20"]
    assert fixed_pick in (0, LAUNCHES)  # a fixed order picks the same token in every launch


def test_float16_accumulator_spreads_wider():
    sums16, _ = launches(np.float16)
    sums32, _ = launches(np.float32)
    spread16 = max(sums16) - min(sums16)
    assert f"{spread16:.2f}" == glued("ds_atom_spread16")
    assert spread16 > 1000 * (max(sums32) - min(sums32))  # 11-bit against 24-bit significands
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal(BLOCKS), rng.standard_normal(BLOCKS)
    exact = float(np.sum(a * b))
    assert f"float64 sum {exact:.7f}" in chapter_outputs.printed(NB, "ds_atom_distinct")


def test_prose_corrects_the_same_shapes_claim_and_cites_its_sources():
    above = chapter_outputs.section(NB, "decoding_sampling-nondeterminism", end=LABEL)
    assert "A GPU kernel whose reduction has a fixed order" in above
    assert "{ref}`decoding_sampling-atomic-nondeterminism`" in above
    assert "for the same shapes it runs the same\norder every time, which is why one request alone on a server is reproducible." \
        not in above
    assert "he2025nondeterminism" in above  # the corrected paragraph keeps its citations
    text = chapter_outputs.section(NB, LABEL, end="decoding_sampling-beam-search")
    assert text.startswith(f"({LABEL})=\n### ")
    for key in ("exllamav2issue232", "exllamav2qgemm", "exllamaissue153", "vllmissue7779", "vllmmarlinatomic",
                "sglangissue39455"):
        assert f"`{key}" in text, key
    assert "Send the same batch twice" in text
    assert ":class: tip" in text and text.count(":class: dropdown followup") == 1
    # exllamav2 q_gemm at commit da07facd: MAX_Q_GEMM_ROWS 32, grid z = ceil(K / block_kn_size), 32 or 64
    assert "up to 32 rows" in text and r"\lceil K / 32 \rceil" in text and r"\lceil K / 64 \rceil" in text
    # vLLM marlin_utils.should_use_atomic_add_reduce: n < 2048, k >= 2048, opt-in environment variable
    assert "$n < 2048$, $k \\ge 2048$" in text and "VLLM_MARLIN_USE_ATOMIC_ADD=1" in text


def test_float16_fixed_order_pick_is_a_tie_with_the_median_rival():
    sums16, fixed16 = launches(np.float16)
    rival = float(np.median(sums16))
    assert fixed16 == rival  # the prose's "20 of 20" for the fixed float16 order is a tie resolved toward A
    assert picks_a([fixed16] * LAUNCHES, rival) == LAUNCHES
    assert sum(1 for _ in range(LAUNCHES) if fixed16 > rival) == 0  # a strict comparison would give 0 of 20
    text = chapter_outputs.section(NB, LABEL, end="decoding_sampling-beam-search")
    assert "is a tie" in text and "drawn uniformly at random" in text


def test_prose_separates_accuracy_from_reproducibility_and_names_other_run_to_run_sources():
    text = chapter_outputs.section(NB, LABEL, end="decoding_sampling-beam-search")
    assert "the direction is the one vLLM took" not in text
    assert "accuracy, not reproducibility" in text and "barrier_acquire(&locks[slice_col], slice_idx)" in text
    assert "a difference means atomics" not in text
    assert "a difference means a run-to-run source" in text and "NVLS" in text and "autotuner" in text
    assert "prefix caching off" in text and "attributed to" in text and "traced to" not in text
    assert "it does not make an atomic reduction ordered" not in text
    assert "switches off atomics only in the kernels it knows about" in text
    # sourced figures appear in the prose exactly as in the cited entries' notes
    bib = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text()
    for key in ("marlinglobalreduce", "ncclissue1497", "sglangpr39456", "sglangpr26627"):
        assert f"`{key}" in text and f"{{{key}," in bib, key
    assert "−9.3%" in text and "-9.3\\%" in bib and "−1.8%" in text and "-1.8\\%" in bib
    assert "4 of 12" in text and "guard off 4 of 12" in bib and "6 of 12" in text
    assert "AT_NUM_MEASURE` = 200" in text and "AT\\_NUM\\_MEASURE 200" in bib
