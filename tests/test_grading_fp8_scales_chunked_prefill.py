"""Exercise 11's Q6 (``fp8_scales``) and Q7 (``chunked_prefill``) as a learner meets them: the judge's messages,
the intros, the rules.

Each finding, checked through the judge's own functions (no notebook is run here;
``tests/test_grading_old_copy_setup_cell.py`` runs ``check`` on a copy whose setup cell fails):

1. a per-tensor scale computed in float32, as vLLM's quantiser computes it, passes; ``expect_float``
   prints enough digits to show two close numbers apart, and names a float32-sized gap;
2-3. a Q7 slip is named only when its own value matches (a worst gap of one step too many is not "the
   sum of the two times"), slips that coincide on a case are named together, and a visible case's chunks
   divide its prompt;
4. a setup cell that failed is named, with its error, its line and what to do;
5. the intros say that every other ``mha_kit`` *name* is switched off (tables too), Q6 where 448 is;
6-7. the common slips of Q6 and Q7 are named;
8. a hint dictionary's colliding keys on a hidden 2-head shape name both slips;
9. "Q4 and Q7 ask you to write".
"""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

import mha_kit as mk
from mha_course.judge.core import first_failure
from mha_course.judge.expect import expect_float
from mha_course.notebook import parse_runs
from mha_course.wire import encode

ROOT = Path(__file__).resolve().parents[1]
VISIBLE6 = (0, (3, 8, 16), 5, 20.0)
HIDDEN6 = (0, (2, 8, 16), 5, 1.0)  # h_kv = 2: 2 * h_kv * s == 4 * s, and d_h == h_kv * s
VISIBLE7 = (6000, 64, 2048, 0.0048, 1.5e-5)
ONE_CHUNK7 = (500, 8, 2048, 0.0048, 1.5e-5)  # a single chunk: the sum's TTFT is one weight read too many
EXACT7 = (40, 7, 8, 0.01, 1e-3)  # room 1: 40 whole chunks


def _keys(seed, shape, channel, factor):
    keys = np.random.default_rng(seed).standard_normal(shape)
    keys[..., channel] *= factor
    return keys


def _message(question, case, result):
    failure = first_failure(question, [case], [encode(result)])
    assert failure is not None, f"{question} {case}: {result!r} passed"
    return failure[2]


# --- Q6 ------------------------------------------------------------------------------------------

def _fp8(x, scale_of=lambda a, axis: np.abs(a).max(axis=axis, keepdims=True) / 448, rounding=None,
         error=lambda back, x: np.abs(back - x).max(), token_axis=-1, dtype=None):
    """A learner's fp8_scales, with one piece swapped for a slip."""
    rounding = rounding or (lambda v: mk.round_minifloat(v, "e4m3"))

    def read_back(scale):
        return rounding(x / scale) * scale

    tensor = scale_of(x, None)
    tokens = scale_of(x, token_axis)
    if dtype is not None:
        tensor, tokens = tensor.astype(dtype), tokens.astype(dtype)
    return (float(np.asarray(tensor).item()), float(error(read_back(tensor), x)), float(error(read_back(tokens), x)),
            4 * int(np.prod(x.shape[:-1])))


def _vllm_float32(x):
    """vLLM's QuantFP8.forward_native: the scale in float32, x times its reciprocal (the reader's answer)."""
    def quant(amax):
        scale = amax.astype(np.float32) / np.float32(448.0)
        return scale, mk.round_minifloat(x * (1 / scale), "e4m3") * scale

    t_scale, t_back = quant(np.abs(x).max(keepdims=True))
    k_scale, k_back = quant(np.abs(x).max(axis=-1, keepdims=True))
    return float(t_scale.item()), float(np.abs(t_back - x).max()), float(np.abs(k_back - x).max()), 4 * k_scale.size


@pytest.mark.parametrize("case", [VISIBLE6, HIDDEN6, (4, (2, 8, 16), 5, 20.0), (1, (1, 4, 8), 0, 1000.0),
                                  (2, (4, 16, 32), 31, 0.001), (3, (3, 5, 64), 7, 50.0)])
def test_a_float32_scale_as_vllm_computes_it_is_right(case):
    assert first_failure("fp8_scales", [case], [encode(_vllm_float32(_keys(*case)))]) is None
    assert first_failure("fp8_scales", [case], [encode(_fp8(_keys(*case)))]) is None  # float64, the reference's


def test_two_floats_that_agree_to_6_digits_are_printed_apart_and_a_float32_gap_is_named():
    expected = 0.0069337874
    got = float(np.float32(expected))
    with pytest.raises(AssertionError) as caught:
        expect_float(got, expected, "scale", rtol=1e-9)
    message = str(caught.value)
    shown = message.split("expected ")[1].split(" (")[0]
    want, have = shown.split(", got ")
    assert want != have and float(want) == pytest.approx(expected, rel=1e-12), message
    assert "float32" in message, message
    with pytest.raises(AssertionError, match=r"expected 2, got 3$"):  # a plain gap keeps its short form
        expect_float(3.0, 2.0, "x")


def test_merge_slips_names_both_slips_of_one_value_each_hint_once():
    from mha_course.judge.expect import merge_slips

    assert merge_slips([(1, "a"), (2, "b"), (1, "c"), (1, "a")]) == [(1, "a; or: c"), (2, "b")]


@pytest.mark.parametrize("slip, hint", [
    (dict(scale_of=lambda a, axis: a.max(axis=axis, keepdims=True) / 448), "amax is the largest magnitude"),
    (dict(rounding=np.round), "rounded to integers"),
    (dict(error=lambda back, x: (np.abs(back - x) / np.abs(x)).max()), "not relative"),
    (dict(token_axis=0), "in its own head (the last axis)"),
])
def test_q6_slips_are_named(slip, hint):
    assert hint in _message("fp8_scales", VISIBLE6, _fp8(_keys(*VISIBLE6), **slip))


def test_q6_slips_that_coincide_on_a_2_head_case_are_named_together():
    x = _keys(*HIDDEN6)
    half_bytes = (*_fp8(x)[:3], 2 * int(np.prod(x.shape[:-1])))  # fp16 scales: 2 * h_kv * s == 4 * s
    message = _message("fp8_scales", HIDDEN6, half_bytes)
    assert "4 bytes" in message and "h_kv * s of them" in message, message
    per_channel = (np.abs(x).max(axis=(0, 1)) / 448, *_fp8(x)[1:])  # d_h == h_kv * s == 16 numbers
    message = _message("fp8_scales", HIDDEN6, per_channel)
    assert "taken per channel" in message and "taken per token" in message, message


# --- Q7 ------------------------------------------------------------------------------------------

def _steps(prompt_tokens, decoding, token_budget, weights_s, token_s):
    room, left, steps = token_budget - decoding, prompt_tokens, []
    while left > 0:
        chunk = min(left, room)
        steps.append(max(weights_s, (chunk + decoding) * token_s))
        left -= chunk
    return steps


def _decode_only(case):
    _, decoding, _, weights_s, token_s = case
    return max(weights_s, decoding * token_s)


def test_a_worst_gap_of_one_step_too_many_is_not_called_the_sum_of_the_times():
    steps = _steps(*VISIBLE7)
    message = _message("chunked_prefill", VISIBLE7, (sum(steps), max(steps) + _decode_only(VISIBLE7)))
    assert "a decode's gap is one step, the chunk's" in message and "not their sum" not in message, message


def test_one_step_too_many_is_named_on_the_visible_case_and_on_whole_chunks():
    steps = _steps(*VISIBLE7)
    message = _message("chunked_prefill", VISIBLE7, (sum(steps) + _decode_only(VISIBLE7), max(steps)))
    assert message.endswith("expected 0.09696, got 0.10176: one step too many: the first token ends the last "
                            "chunk's step"), message
    prompt, decoding, budget, weights_s, token_s = EXACT7
    room, ttft, worst, left = budget - decoding, 0.0, 0.0, prompt
    for _ in range(prompt // room + 1):  # the reader's loop: an empty step when the room divides the prompt
        chunk = min(room, left)
        step = max(weights_s, (chunk + decoding) * token_s)
        ttft, worst, left = ttft + step, max(worst, step), left - chunk
    assert "one step too many" in _message("chunked_prefill", EXACT7, (ttft, worst))


def test_slips_that_give_one_value_are_named_together():
    """One chunk: one decode step too many and the sum of the two times give the same TTFT; both are named."""
    steps = _steps(*ONE_CHUNK7)
    message = _message("chunked_prefill", ONE_CHUNK7, (sum(steps) + _decode_only(ONE_CHUNK7), max(steps)))
    assert "one step too many" in message and "not their sum" in message, message


@pytest.mark.parametrize("slip, hint", [
    ("full", "the last chunk holds only the rest of the prompt"),
    ("short", "one step short: the last, partial chunk needs a step too"),
    ("decode_only", "the worst gap is a step that also holds a chunk"),
])
def test_q7_slips_are_named(slip, hint):
    prompt, decoding, budget, weights_s, token_s = VISIBLE7
    steps, full = _steps(*VISIBLE7), max(weights_s, budget * token_s)
    got = {"full": (math.ceil(prompt / (budget - decoding)) * full, full),
           "short": (prompt // (budget - decoding) * full, full),
           "decode_only": (sum(steps), _decode_only(VISIBLE7))}[slip]
    assert hint in _message("chunked_prefill", VISIBLE7, got)


def _code_cells(folder, assignment):
    nb = json.loads((ROOT / folder / assignment / f"{assignment}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"], nb


def test_a_visible_q7_case_has_chunks_that_divide_its_prompt():
    cells, _ = _code_cells("exercises", "11_serving_2026")
    cases = [case for source in cells for question, found in parse_runs(source) if question == "chunked_prefill"
             for case in found]
    assert any(prompt % (budget - decoding) == 0 for prompt, decoding, budget, _, _ in cases), cases


# --- texts and rules -----------------------------------------------------------------------------

def test_the_intros_say_every_other_name_is_switched_off():
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        intro = " ".join("".join(json.loads(path.read_text())["cells"][0]["source"]).split())
        assert "`mha_kit` name (a function, a table, a constant) is switched off" in intro, path
        assert "function is switched off" not in intro and "calls one" not in intro, path


def test_q6_says_where_448_comes_from_and_that_its_tables_are_switched_off():
    nb = json.loads((ROOT / "exercises/11_serving_2026/11_serving_2026.ipynb").read_text())
    text = " ".join(" ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown").split())
    assert '`mk.MINIFLOATS["e4m3"]` holds its exponent bits, mantissa bits and largest number' in text
    assert "tables of the number formats" in text.split("**How this works.**")[0]
    assert "tables `mk.KV_FORMAT_MAX` and `mk.FLOAT_FORMATS` are switched off here" in text
    assert "a float32 scale passes here" in text


def test_a_rule_of_several_questions_says_ask():
    from mha_course.plugins.graded_kit import refused

    rules = refused("11_serving_2026")
    assert rules["simulate_batching"].endswith("it is what Q4 and Q7 ask you to write"), rules["simulate_batching"]
    assert rules["quantize_e4m3"].endswith("it is what Q6 asks you to write")


OLD_SETUP_ERROR = {
    "output_type": "error", "ename": "ModuleNotFoundError", "evalue": "No module named 'mha_course.judge.cases'",
    "traceback": ["\x1b[31m---------------------------------------------------------------------------\x1b[39m",
                  "\x1b[31mModuleNotFoundError\x1b[39m                       Traceback (most recent call last)",
                  "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[1]\x1b[39m\x1b[32m, line 3\x1b[39m\n"
                  "\x1b[32m----> \x1b[39m\x1b[32m3\x1b[39m from mha_course.judge.cases import config, run\n",
                  "\x1b[31mModuleNotFoundError\x1b[39m: No module named 'mha_course.judge.cases'"]}


def test_a_setup_cell_that_failed_is_named_with_its_error_line_and_what_to_do():
    import nbformat

    from mha_course.check import setup_failure

    nb = nbformat.read(ROOT / "exercises/11_serving_2026/11_serving_2026.ipynb", as_version=4)
    assert setup_failure(nb) is None
    setup = next(c for c in nb.cells if c.cell_type == "code")
    setup.outputs = [nbformat.from_dict(OLD_SETUP_ERROR)]
    assert setup_failure(nb) == (
        "the setup cell failed with ModuleNotFoundError: No module named 'mha_course.judge.cases' (line 3): this copy "
        "predates the course's update: download the current release, or change the import to mha_course.kernel.cases")
    setup.outputs = [nbformat.from_dict({"output_type": "error", "ename": "SyntaxError",
                                         "evalue": "invalid syntax (2961806025.py, line 2)", "traceback": []})]
    assert setup_failure(nb) == "the setup cell failed with SyntaxError: invalid syntax (line 2): fix it and run the notebook again"


def test_the_old_path_is_not_re_exported():
    """An old copy is told what to do; the judge holds no kernel module (the layers' arrow points one way)."""
    assert importlib.util.find_spec("mha_course.judge.cases") is None
