"""Section decoding_sampling-retry-cost of "Decoding and sampling": the cost of validate-and-retry.

Recomputed from closed forms, not through the chapter's helpers: the geometric p99 as
ceil(log 0.01 / log(1 - p)), the capped mean (1 - (1 - p)^k) / p, the two-kind mixture from its
probability mass function, the token sums term by term, and MaskBench's table (guidance-ai/jsonschemabench,
maskbench/README.md: llguidance 0.6.7 and XGrammar 0.1.10, microseconds) for the constrained side.
"""
import math

import chapter_outputs

K = 3  # attempts in all
PROMPT, OUT, ERR = 1500, 300, 60
EASY, P_EASY, P_HARD = 0.9, 0.98, 0.18
LLG = dict(ttfm50=987, tbm_mean=47, errors=2_373)
XG = dict(ttfm50=535_498, ttfm99=62_151_076, tbm_mean=292, errors=2_089)
SCHEMAS, STEP_S, BATCH = 10_163, 0.020, 100


NB = chapter_outputs.notebook("decoding_sampling")  # read once: glued() is called for every value


def glued(key):
    return chapter_outputs.glued(NB, key)


def geometric_p99(p):
    return math.ceil(math.log(0.01) / math.log(1 - p) - 1e-9)


def pmf_mixed(n):  # P(N = n) for the easy/hard mixture
    return sum(w * (1 - q) ** (n - 1) * q for w, q in ((EASY, P_EASY), (1 - EASY, P_HARD)))


def tail_mixed(n):  # P(N > n) = 1 - sum of the pmf up to n
    return 1 - sum(pmf_mixed(m) for m in range(1, n + 1))


def test_independent_geometric_tail():
    assert [geometric_p99(p) for p in (0.99, 0.95, 0.9, 0.7, 0.5)] == [1, 2, 2, 4, 7]
    assert [glued(f"ds_rt_p99_{x}") for x in (90, 70, 50)] == ["2", "4", "7"]
    # the knife edge: 0.1^2 is exactly 1%, so just below p = 0.9 (and p = 0.99) the p99 grows by one
    assert geometric_p99(0.89) == 3 and glued("ds_rt_p99_89") == "3"
    assert geometric_p99(0.989) == 2 and glued("ds_rt_p99_989") == "2"
    assert glued("ds_rt_mean_90") == f"{1 / 0.9:.2f}" == "1.11"
    assert glued("ds_rt_resid_90") == "0.1%" and glued("ds_rt_resid_70") == "2.7%"
    table = chapter_outputs.printed(chapter_outputs.notebook("decoding_sampling"), "def attempts_p99")
    for p in (0.95, 0.7, 0.5):  # the capped mean, closed form, in the printed table
        assert f"{(1 - (1 - p) ** K) / p:.3f}" in table


def test_correlated_mixture():
    assert math.isclose(1 - tail_mixed(1), 0.9)
    fail_again = tail_mixed(2) / tail_mixed(1)
    assert f"{fail_again:.2f}" == "0.68" == glued("ds_rt_fail_again")
    mean = sum(n * pmf_mixed(n) for n in range(1, 2000))
    assert f"{mean:.2f}" == "1.47" == glued("ds_rt_mix_mean")
    p99 = next(n for n in range(1, 100) if tail_mixed(n) <= 0.01)
    assert p99 == 12 and glued("ds_rt_mix_p99") == "12"
    assert tail_mixed(11) > 0.01  # 11 attempts are not enough at the p99
    assert f"{tail_mixed(K):.1%}" == "5.5%" == glued("ds_rt_mix_resid")


def tokens(tail, k):
    inp = out = 0.0
    for attempt in range(1, k + 1):  # attempt j happens when the first j - 1 failed
        reach = tail(attempt - 1) if attempt > 1 else 1.0
        inp += reach * (PROMPT + (attempt - 1) * (OUT + ERR))
        out += reach
    return inp / PROMPT, out


def test_token_multiples():
    out_ind = tokens(lambda n: 0.1 ** n, K)[1]
    inp_mix, out_mix = tokens(tail_mixed, K)
    assert f"{out_ind:.2f}" == "1.11" == glued("ds_rt_out_ind")
    assert (f"{out_mix:.2f}", f"{inp_mix:.2f}") == ("1.17", "1.22") == (glued("ds_rt_out_mix"), glued("ds_rt_in_mix"))
    out_h = tokens(lambda n: 0.03 ** n, 2)[1]  # the hybrid: semantic validity 0.97, two attempts
    assert f"{out_h:.2f}" == "1.03" == glued("ds_rt_hyb_out")
    assert glued("ds_rt_hyb_resid") == f"{0.03 ** 2:.2%}" == "0.09%"
    assert glued("ds_rt_hyb_p99") == "2"  # 3% retry, more than 1%
    table = chapter_outputs.printed(chapter_outputs.notebook("decoding_sampling"), "def token_multiples")
    assert table.count(f"input x1.00 (shared prefill), output x{K:.2f}") == 2  # parallel: one prefill, K outputs


def test_constrained_side_from_maskbench():
    assert glued("ds_rt_gen_s") == f"{OUT * STEP_S:.0f}" == "6"
    assert (glued("ds_rt_llg_c50"), glued("ds_rt_xg_c50"), glued("ds_rt_xg_c99")) == ("1.0", "535", "62")
    assert XG["ttfm99"] / 1e6 > OUT * STEP_S  # XGrammar's p99 compile costs more than a generation
    assert (glued("ds_rt_llg_cpu"), glued("ds_rt_xg_cpu")) == ("4.7", "29.2")  # 100 x 47 us, 100 x 292 us
    assert BATCH * LLG["tbm_mean"] * 1e-6 < STEP_S < BATCH * XG["tbm_mean"] * 1e-6 < 2 * STEP_S
    assert glued("ds_rt_xg_cores") == "2"  # XGrammar needs a second core at this batch, llguidance one
    assert glued("ds_rt_slow_masks") == "50"  # 1% of 100 masks per 20 ms step: MaskBench's own note
    assert glued("ds_rt_llg_noc") == f"{LLG['errors'] / SCHEMAS:.0%}" == "23%"
    assert glued("ds_rt_xg_c99_gen") == f"{XG['ttfm99'] / 1e6 / (OUT * STEP_S):.1f}" == "10.4"
    assert glued("ds_rt_xg_inval") == "1,249"


def test_vllm_overlap_pr():
    # vllm-project/vllm PR 26866 throughput table, requests/s
    before, after, async_, plain, plain_async = 69.36, 85.28, 90.34, 103.16, 132.72
    assert [glued(f"ds_rt_vllm_{k}") for k in ("before", "after", "async", "plain", "plain_async")] == [
        f"{x:.0f}" for x in (before, after, async_, plain, plain_async)] == ["69", "85", "90", "103", "133"]
    assert before < after < async_ < plain  # overlap helps, but structured output is still not free
