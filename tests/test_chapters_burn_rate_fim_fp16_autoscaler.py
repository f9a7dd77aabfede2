"""Claims on error-budget burn, fill-in-the-middle order, an fp16 overflow and an autoscaler replay, recomputed
independently of the notebooks.

serving_operations-error-budget, serving_operations-code-completion, weight_quantization-error-spike,
multi_tenant_serving-autoscaler-replay.
"""

import numpy as np

import mha_kit as mk


def test_fast_burn_page_at_a_99_percent_slo():
    # SRE Workbook ch. 5: 2% of a 30-day budget in one hour; at SLO 99% that is 14.4% bad requests
    burn = 0.02 * (30 * 24) / 1
    assert round(burn, 6) == 14.4
    assert round(burn * (1 - 0.99), 6) == 0.144
    assert round(30 * 24 / burn) == 50  # hours until the budget is gone


def test_fim_order_and_prefix_cache_blocks():
    # repo 3000, prefix 1500, suffix 500, 2 typed tokens, 3 sentinels, blocks of 16
    repo, before, after, typed, block = 3000, 1500, 500, 2, 16
    total = repo + before + after + typed + 3
    # PSM: repo <P> prefix <S> suffix <M>; the first change is right after the old prefix
    first_change_psm = repo + 1 + before
    # SPM: repo <S> suffix <P> prefix <M>; the first change is right after the old prefix, now last
    first_change_spm = repo + 1 + after + 1 + before
    psm_cached = first_change_psm // block * block
    spm_cached = first_change_spm // block * block
    assert (total, psm_cached, total - psm_cached) == (5005, 4496, 509)
    assert (spm_cached, total - spm_cached) == (4992, 13)


def test_fp16_overflow_turns_the_row_into_nan():
    assert float(np.finfo(np.float16).max) == 65504.0
    row = np.array([3.0, -1.5, 7.2e4, 0.5]).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        half = row.astype(np.float16).astype(np.float64)
        normed = half / np.sqrt(np.mean(half ** 2) + 1e-6)
        out = normed @ np.ones((4, 4))
    assert np.isinf(half[2]) and np.isnan(normed[2]) and np.isnan(out).all()


def test_autoscaler_step_needs_headroom_or_fast_start():
    # a step from 1 to 3 replicas' worth: with a 2-step start-up the first two steps of it are missed
    share, paid, actions = mk.replay_autoscaler([1, 1, 3, 3, 3, 1], 1, 2, 1.0, 1)
    assert share == 4 / 6 and paid == 1 + 1 + 3 + 3 + 3 + 1 and actions == 2
