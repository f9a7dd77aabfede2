"""mk.best_of_n_time: one sample equals the plain decode loop; cascade reads the prompt once."""
import pytest

import mha_kit as mk

STEP = mk.roofline_step(mk.MODEL_FACTS["llama-3-8b"], mk.GPUS["h100-sxm"])


def test_one_sample_is_the_ordinary_decode_loop():
    got = mk.best_of_n_time(STEP, 300, 20, 1)
    assert got.decode_s == pytest.approx(sum(STEP(0, 1, 300 + t) for t in range(20)))
    assert got.prefill_s == STEP(300, 0, 0) and got.output_tokens == 20
    assert mk.best_of_n_time(STEP, 300, 20, 1, cascade=True) == got  # one sample: nothing to share


def test_cascade_reads_the_prompt_once():
    n, prompt = 8, 1000
    plain, casc = mk.best_of_n_time(STEP, prompt, 1, n), mk.best_of_n_time(STEP, prompt, 1, n, cascade=True)
    saved_bytes = STEP.kv_bytes_per_token * (n - 1) * prompt  # first step: prompt read 8 times against once
    assert plain.decode_s - casc.decode_s == pytest.approx(saved_bytes / STEP.bandwidth)


def test_n_samples_decode_in_shared_steps():
    one, sixteen = mk.best_of_n_time(STEP, 2000, 50, 1), mk.best_of_n_time(STEP, 2000, 50, 16)
    assert sixteen.prefill_s == one.prefill_s  # the prompt is prefilled once
    assert one.decode_s < sixteen.decode_s < 2 * one.decode_s  # 16x the tokens, well under 2x the time


def test_errors():
    with pytest.raises(ValueError, match="step must be a RooflineStep"):
        mk.best_of_n_time(lambda *a: 0.0, 10, 10, 2)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        mk.best_of_n_time(STEP, 10, 10, 0)
