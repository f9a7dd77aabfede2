"""Shared machinery of the grading tests: build submissions, grade them in one subprocess.

A *submission* starts from the released notebook (what a learner downloads) with every answer
cell filled from the solutions, then changes some answers: ``None`` keeps the release's stub
(an unanswered question); a ``(old, new)`` pair edits the solution's text (a plausible mistake).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
#: The course's assignments, from the course manifest.
from mha_course.course import ASSIGNMENTS  # noqa: E402


def read(kind, assignment):
    """The notebook of ``assignment`` in ``solutions`` or ``exercises``."""
    return nbformat.read(ROOT / kind / assignment / f"{assignment}.ipynb", as_version=4)


def _nbgrader(cell):
    return cell.metadata.get("nbgrader", {})


def answer_ids(assignment):
    """grade_ids of the answer (solution) cells, in order."""
    return [_nbgrader(c)["grade_id"] for c in read("solutions", assignment).cells if _nbgrader(c).get("solution")]


def points_of_tests(assignment):
    """``{test grade_id: points}`` in notebook order."""
    cells = read("solutions", assignment).cells
    return {_nbgrader(c)["grade_id"]: float(_nbgrader(c)["points"]) for c in cells if _nbgrader(c).get("grade")}


def tests_of_answer(assignment):
    """``{answer grade_id: [test grade_ids]}``: the test cells after an answer, up to the next answer."""
    owner, result = None, {}
    for cell in read("solutions", assignment).cells:
        meta = _nbgrader(cell)
        if meta.get("solution"):
            owner = meta["grade_id"]
            result[owner] = []
        elif meta.get("grade"):
            result[owner].append(meta["grade_id"])
    return result


def submission(assignment, changes):
    """The release with every answer filled in from the solutions, then ``changes`` applied.

    ``changes`` maps an answer's grade_id to ``None`` (leave the stub) or ``(old, new)`` (replace
    the text ``old`` of the solution by ``new``; ``old`` must occur in it).
    """
    solutions = {_nbgrader(c)["grade_id"]: c.source for c in read("solutions", assignment).cells
                 if _nbgrader(c).get("solution")}
    nb = read("exercises", assignment)
    for cell in nb.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        if grade_id not in solutions:
            continue
        change = changes.get(grade_id, ())
        if change is None:
            continue  # keep the stub
        cell.source = solutions[grade_id]
        if change:
            old, new = change
            if old not in cell.source:
                raise ValueError(f"{old!r} does not occur in the solution of {grade_id}")
            cell.source = cell.source.replace(old, new)
    return nb


def grade_all(specs, workdir, overrides=(), with_errors=False, keep=False):
    """Grade ``{assignment: {student: notebook}}`` with ``python -m mha_course.grading`` in one subprocess.

    Returns ``{assignment: {student: {test grade_id: score}}}``, and with ``with_errors`` also
    ``{assignment: {student: {test grade_id: "Ename: evalue"}}}`` of the failing cells. With ``keep``
    the course stays in ``workdir / "course"`` (the autograded notebooks under ``autograded/``).
    """
    workdir = Path(workdir)
    spec = {}
    for assignment, students in specs.items():
        spec[assignment] = {}
        for student, nb in students.items():
            path = workdir / "in" / student / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
            spec[assignment][student] = str(path)
    (workdir / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    proc = subprocess.run([sys.executable, "-m", "mha_course.grading", str(workdir / "spec.json"), str(workdir / "out.json"),
                           *([f"--root={workdir / 'course'}"] if keep else []), *overrides],
                          capture_output=True, text=True, cwd=workdir, env=env, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"grading failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = json.loads((workdir / "out.json").read_text())
    scores = {a: {s: {gid: score for gid, (score, _) in grades.items()} for s, grades in students.items()}
              for a, students in out.items()}
    return (scores, json.loads((workdir / "out.errors.json").read_text())) if with_errors else scores


def lost_without(assignment, answer):
    """Test cells that score zero when ``answer`` is left blank: its own only. Answers building on it
    (``builds_on`` in the course manifest) are graded with the solution's ``answer`` in its place
    (error carried forward, :mod:`mha_course.judge.carry`)."""
    return set(tests_of_answer(assignment)[answer])


def expected_scores(assignment, lost):
    """Full marks on every test cell except those in ``lost``, which score zero."""
    return {gid: 0.0 if gid in lost else points for gid, points in points_of_tests(assignment).items()}


# Plausible wrong answers, per assignment: (name, answer grade_id, old text, new text, test cells
# that must score zero). Every other test cell must keep full marks.
WRONG_ANSWERS = {
    "01_shapes": [
        ("head_dim_float_division", "head_dim_answer", "d_model // num_heads", "d_model / num_heads",
         {"head_dim_transformer_base"}),
        ("scores_per_head_size", "head_shapes_answer", '"scores": (batch, num_heads, n, n)',
         '"scores": (batch, num_heads, n, d_model // num_heads)', {"head_shapes_scores_concat_output"}),
        ("split_by_plain_reshape", "split_heads_answer",
         "x = x.reshape(B, n, num_heads, d // num_heads)  # (B, n, h, d_h)\n    return x.transpose(0, 2, 1, 3)",
         "return x.reshape(B, num_heads, n, d // num_heads)", {"split_heads_matches_mha_kit"}),
    ],
    "02_params_compute": [
        # the visible test is MHA, so only the GQA cell (hidden cases included) loses its points
        ("gqa_counted_as_mha", "projection_params_answer", "2 * d_model * num_kv_heads * head_dim",
         "2 * d_model * num_heads * head_dim", {"params_gqa_llama3_70b"}),
        ("macs_scores_only", "attention_macs_answer", "return scores + value_mix", "return scores",
         {"attention_macs_sequence_and_decode"}),
        ("macs_counted_as_flops", "attention_macs_answer", "return scores + value_mix",
         "return 2 * (scores + value_mix)", {"attention_macs_sequence_and_decode"}),
        ("every_count_changes", "changes_with_h_answer", '{"score_count"}',
         '{"projection_params", "attention_macs", "score_count"}', {"changes_with_h_set"}),
    ],
    "03_kv_cache": [
        ("bits_not_bytes", "kv_bytes_read_answer", "return -(-elements * bits // 8)", "return elements * bits",
         {"kv_bytes_read_llama3_70b_8k"}),
        ("gqa_counted_as_mha", "cache_bytes_per_token_answer", "2 * cfg.num_kv_heads", "2 * cfg.num_heads",
         {"cache_per_token_llama3_8b"}),
        ("mla_without_rotary_key", "mla_cache_answer", "(cfg.kv_lora_rank + cfg.qk_rope_head_dim)",
         "cfg.kv_lora_rank", {"mla_cache_deepseek_v2"}),
        ("max_context_as_float", "max_context_answer", "memory_bytes * 8 // bits_per_token",
         "memory_bytes * 8 / bits_per_token", {"max_context_llama3_8b_16gib"}),
        # an int of a float division: right for every visible size, wrong past 2**53 bytes (hidden)
        ("max_context_int_of_float", "max_context_answer", "memory_bytes * 8 // bits_per_token",
         "int(memory_bytes * 8 / bits_per_token)", {"max_context_llama3_8b_16gib"}),
        # rounds down: right for whole bytes (the visible case), wrong for 3- and 6-bit numbers (hidden)
        ("bytes_rounded_down", "kv_bytes_read_answer", "return -(-elements * bits // 8)", "return elements * bits // 8",
         {"kv_bytes_read_llama3_70b_8k"}),
    ],
    "04_implement_attention": [
        ("softmax_without_max", "softmax_answer", "np.exp(x - np.max(x, axis=axis, keepdims=True))", "np.exp(x)",
         {"softmax_large_scores_stable"}),
        # multi-head attention builds on the learner's attention (Q4 uses Q3): graded with a correct one, it keeps its points
        ("forgot_scale", "attention_answer", "scores = q @ k.T / np.sqrt(q.shape[-1])", "scores = q @ k.T",
         {"attention_unmasked", "attention_causal"}),
        ("mask_after_softmax", "attention_answer",
         "        scores = np.where(mask, scores, -np.inf)  # before softmax: masked keys get weight 0\n"
         "    return softmax(scores) @ v",
         "        return (softmax(scores) * mask) @ v\n    return softmax(scores) @ v",
         {"attention_causal"}),
        ("gqa_copies_kv", "gqa_answer", "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)",
         "k, v = np.repeat(k, h // h_kv, axis=0), np.repeat(v, h // h_kv, axis=0)\n"
         "    h_kv = h\n    q_grouped = q", {"gqa_without_copies"}),
        # the same copy with a fancy index: right values, caught by reading the code
        ("gqa_fancy_index_copy", "gqa_answer", "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)",
         "k, v = k[np.arange(h) // (h // h_kv)], v[np.arange(h) // (h // h_kv)]\n    h_kv = h\n    q_grouped = q",
         {"gqa_without_copies"}),
        ("gqa_modulo_head", "gqa_answer", "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)",
         "q_grouped = q.reshape(h // h_kv, h_kv, n, d_h).transpose(1, 0, 2, 3).reshape(h_kv, -1, d_h)",
         {"gqa_matches_mha_kit", "gqa_without_copies"}),
    ],
    "05_decoding": [
        ("forgot_scale", "decode_step_answer", "mk.decode_attention(q, cache.keys",
         "mk.decode_attention(q * np.sqrt(d_h), cache.keys", {"decode_matches_causal_pass"}),
        ("macs_scores_only", "decode_macs_answer", "return 2 * num_heads", "return num_heads",
         {"decode_macs_llama3_70b"}),
        ("intensity_in_macs", "flops_per_byte_answer", "flops_per_key = 2 * 2 * num_heads",
         "flops_per_key = 2 * num_heads", {"flops_per_byte_gqa"}),
    ],
    "06_spot_the_bug": [
        ("mask_still_after_softmax", "fixed_causal_attention_answer",
         "scores = np.where(mk.causal_mask(len(q)), scores, -np.inf)  # mask the scores, before softmax\n"
         "    return mk.softmax(scores) @ v",
         "weights = np.where(mk.causal_mask(len(q)), mk.softmax(scores), 0.0)\n    return weights @ v",
         {"bug_mask_after_softmax"}),
        ("scale_removed", "fixed_attention_answer", "q @ k.T / np.sqrt(q.shape[-1])", "q @ k.T",
         {"bug_wrong_scale"}),
        # passes the visible h=4, h_kv=2 case (g == h_kv there); the hidden h=8, h_kv=2 case fails
        ("kv_head_i_div_h_kv", "fixed_grouped_attention_answer", "j = i // g", "j = i // h_kv",
         {"bug_wrong_kv_head"}),
        ("cache_bytes_as_float", "fixed_cache_bytes_answer", "* bits // 8", "* bits / 8",
         {"bug_cache_without_v"}),
        # the fix is right, the diagnosis is not: only the diagnosis point is lost
        ("q1_names_the_mask_direction", "q1_mistake_answer", 'return "C"', 'return "D"', {"q1_mistake_named"}),
        ("q3_names_a_distractor_in_lower_case", "q3_mistake_answer", 'return "H"', 'return "a"', {"q3_mistake_named"}),
        ("q5_names_a_word_not_a_letter", "q5_mistake_answer", 'return "B"', 'return "only K"', {"q5_mistake_named"}),
    ],
}


# {assignment: {answer grade_id: source}}: answers that only call the mha_kit reference the question
# asks the learner to write (or, with no single reference, the closest one-line use of forbidden
# mha_kit code). Graded with the learner edition, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "01_shapes": {
        "split_heads_answer": "def split_heads(x, num_heads):\n    return mk.split_heads(x, num_heads)",
        "merge_heads_answer": "def merge_heads(x):\n    return mk.merge_heads(x)",
    },
    "02_params_compute": {
        "projection_params_answer": "def projection_params(d_model, num_heads, num_kv_heads, head_dim):\n"
                                    "    cfg = mk.AttentionConfig(d_model, num_heads, num_kv_heads, head_dim)\n"
                                    "    return mk.projection_params(cfg)",
        "attention_macs_answer": "def attention_macs(num_heads, head_dim, n_queries, n_keys):\n"
                                 "    cfg = mk.AttentionConfig(num_heads * head_dim, num_heads)\n"
                                 "    return mk.attention_macs(cfg, n_keys, n_queries)",
        "score_count_answer": "def score_count(num_heads, n):\n"
                              "    return mk.score_count(mk.AttentionConfig(num_heads, num_heads), n)",
    },
    "03_kv_cache": {
        "kv_bytes_read_answer": "def kv_bytes_read(num_kv_heads, head_dim, context_len, bits=16):\n"
                                "    cfg = mk.AttentionConfig(num_kv_heads * head_dim, num_kv_heads, head_dim=head_dim)\n"
                                "    return mk.kv_bytes_read(cfg, context_len, bits)",
        "cache_bytes_per_token_answer": "def cache_bytes_per_token(cfg, bits=16):\n"
                                        "    return mk.kv_cache_bytes_per_token(cfg, bits)",
        "mla_cache_answer": "def mla_cache_bytes_per_token(cfg, bits=16):\n    return mk.kv_cache_bytes_per_token(cfg, bits)",
        "kv_cache_bytes_answer": "def kv_cache_bytes(cfg, context_len, batch_size, bits=16):\n"
                                 "    return mk.kv_cache_bytes(cfg, context_len, batch_size, bits)",
        "max_context_answer": "def max_context(cfg, memory_bytes, bits=16, batch_size=1):\n"
                              "    return mk.max_context_tokens(cfg, memory_bytes, bits, batch_size)",
    },
    "04_implement_attention": {
        "softmax_answer": "def softmax(x, axis=-1):\n    return mk.softmax(x, axis)",
        "causal_mask_answer": "def causal_mask(n):\n    return mk.causal_mask(n)",
        "attention_answer": "def attention(q, k, v, mask=None):\n    return mk.scaled_dot_product_attention(q, k, v, mask)[0]",
        "multi_head_answer": "def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=False):\n"
                             "    return mk.multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=causal)[0]",
        "gqa_answer": "def grouped_attention(q, k, v):\n    return mk.grouped_attention(q, k, v)[0]",
    },
    "05_decoding": {
        "decode_step_answer": "def decode_step(x_t, w_q, w_k, w_v, w_o, num_heads, cache):\n"
                              "    return mk.cached_attention(x_t[None], w_q, w_k, w_v, w_o, num_heads, cache)[0][0]",
        "decode_macs_answer": "def decode_step_macs(num_heads, head_dim, cache_len):\n"
                              "    return mk.attention_macs(mk.AttentionConfig(num_heads * head_dim, num_heads), cache_len)",
        "flops_per_byte_answer": "def decode_flops_per_byte(num_heads, num_kv_heads, head_dim, bits=16):\n"
                                 "    cfg = mk.AttentionConfig(num_heads * head_dim, num_heads, num_kv_heads)\n"
                                 "    return mk.arithmetic_intensity(cfg, 1, bits)",
    },
    "06_spot_the_bug": {
        "fixed_causal_attention_answer": "def fixed_causal_attention(q, k, v):\n"
                                         "    return mk.scaled_dot_product_attention(q, k, v, mk.causal_mask(len(q)))[0]",
        "fixed_attention_answer": "def fixed_attention(q, k, v):\n    return mk.scaled_dot_product_attention(q, k, v)[0]",
        "fixed_grouped_attention_answer": "def fixed_grouped_attention(q, k, v):\n    return mk.grouped_attention(q, k, v)[0]",
        "fixed_merge_heads_answer": "def fixed_merge_heads(heads):\n    return mk.merge_heads(heads[None])[0]",
        "fixed_cache_bytes_answer": "def fixed_cache_bytes(cfg, context_len, batch_size, bits=16):\n"
                                    "    return mk.kv_cache_bytes(cfg, context_len, batch_size, bits)",
    },
}

# {assignment: {answer grade_id: why}}: the answers with no forbidden reference at all; each is
# arithmetic (or a choice) on what the learner edition allows, which has no function that answers it.
NO_REFERENCE = {
    "01_shapes": {
        # mk.AttentionConfig(d, h).head_dim also gives d // h: a base helper (every assignment's configs),
        # whose one line of division is the question's; nothing in mha_kit lists the arrays' shapes
        "head_dim_answer": "d // h, arithmetic",
        "head_shapes_answer": "shapes from arithmetic; no mha_kit function lists them",
    },
    "02_params_compute": {"changes_with_h_answer": "a set of names, the learner's reasoning"},
    "06_spot_the_bug": {f"q{i}_mistake_answer": "a letter from the notebook's list of mistakes" for i in range(1, 6)},
}


def build_specs(assignments):
    """Every submission the grading tests need, ``{assignment: {student: notebook}}``."""
    specs = {}
    for assignment in assignments:
        students = {"solution": submission(assignment, {}), "release": read("exercises", assignment)}
        for answer in answer_ids(assignment):
            students[f"no_{answer}"] = submission(assignment, {answer: None})
        for name, answer, old, new, _ in WRONG_ANSWERS[assignment]:
            students[f"wrong_{name}"] = submission(assignment, {answer: (old, new)})
        specs[assignment] = students
    return specs


def score_tests(assignments):
    """The score tests for ``assignments``, for a test module to put in its globals.

    The course is split over two modules (``test_grading_scores_a`` and ``_b``) so that
    pytest-xdist's ``--dist loadfile`` grades the halves on two workers at once; each module
    grades all its submissions in one subprocess (a module-scoped fixture), paying nbgrader's
    start-up once.
    """
    import pytest

    removals = [(a, answer) for a in assignments for answer in answer_ids(a)]
    wrong = [(a, w[0]) for a in assignments for w in WRONG_ANSWERS[a]]

    @pytest.fixture(scope="module")
    def scores(tmp_path_factory):
        return grade_all(build_specs(assignments), tmp_path_factory.mktemp("grading"))

    @pytest.mark.parametrize("assignment", assignments)
    def test_solution_scores_full_marks(scores, assignment):
        assert scores[assignment]["solution"] == expected_scores(assignment, lost=())

    @pytest.mark.parametrize("assignment", assignments)
    def test_untouched_release_scores_zero(scores, assignment):
        assert scores[assignment]["release"] == expected_scores(assignment, lost=points_of_tests(assignment))

    @pytest.mark.parametrize("assignment, answer", removals)
    def test_removing_one_answer_loses_only_its_points(scores, assignment, answer):
        assert tests_of_answer(assignment)[answer], f"answer {answer} has no test cell"
        lost = lost_without(assignment, answer)
        assert scores[assignment][f"no_{answer}"] == expected_scores(assignment, lost)

    @pytest.mark.parametrize("assignment, name", wrong)
    def test_wrong_answer_scores_as_designed(scores, assignment, name):
        (lost,) = [w[4] for w in WRONG_ANSWERS[assignment] if w[0] == name]
        assert scores[assignment][f"wrong_{name}"] == expected_scores(assignment, lost)

    @pytest.mark.parametrize("assignment", assignments)
    def test_at_least_three_wrong_answers(assignment):
        assert len(WRONG_ANSWERS[assignment]) >= 3

    return {name: obj for name, obj in locals().items() if name == "scores" or name.startswith("test_")}


def score_and_reference_tests(assignments):
    """``score_tests(assignments)`` plus the reference-call tests, graded in one batch.

    The ``scores`` fixture returned replaces score_tests' own, so that one nbgrader subprocess grades
    the designed submissions and the reference calls together.
    """
    import re

    import pytest

    from mha_course.course import BASE_HELPERS, COURSE

    tests = score_tests(assignments)

    @pytest.fixture(scope="module")
    def graded(tmp_path_factory):
        specs = build_specs(assignments)
        for assignment in assignments:
            for i, group in enumerate(reference_call_groups(assignment)):
                specs[assignment][f"reference_call_{i}"] = reference_call(assignment, group)
        return grade_all(specs, tmp_path_factory.mktemp("grading"), with_errors=True)

    @pytest.fixture(scope="module")
    def scores(graded):
        return graded[0]

    @pytest.mark.parametrize("assignment", assignments)
    def test_an_answer_that_calls_the_reference_earns_nothing(graded, assignment):
        scores, errors = graded
        for i, group in enumerate(reference_call_groups(assignment)):
            student = f"reference_call_{i}"
            lost = {t for answer in group for t in lost_without(assignment, answer)}
            assert scores[assignment][student] == expected_scores(assignment, lost), group
            for test in lost:
                assert f"is not available in {assignment}" in errors[assignment][student][test], (group, test)

    own = [a for a in assignments if a not in _V2]  # 07-10's table in grading_support_v2 covers only some answers

    @pytest.mark.parametrize("assignment", own)
    def test_every_answer_has_a_reference_call(assignment):
        """Each answer is in REFERENCE_CALLS, or in NO_REFERENCE (nothing in mha_kit answers it)."""
        covered = set(REFERENCE_CALLS[assignment]) | set(NO_REFERENCE.get(assignment, ()))
        assert covered == set(answer_ids(assignment))
        assert not set(REFERENCE_CALLS[assignment]) & set(NO_REFERENCE.get(assignment, ()))

    @pytest.mark.parametrize("assignment", assignments)
    def test_every_answer_is_written_from_scratch(assignment):
        """The solutions (full marks with the learner edition) call no mha_kit function beyond the allowed helpers."""
        allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
        for cell in read("solutions", assignment).cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                used = set(re.findall(r"\bmk\.(\w+)", cell.source))
                assert used <= allowed, (cell.metadata["nbgrader"]["grade_id"], used - allowed)

    if not own:
        del test_every_answer_has_a_reference_call
    return {**tests, **{name: obj for name, obj in locals().items() if name in ("graded", "scores")
                        or name.startswith("test_")}}


def reference_call(assignment, answers=None):
    """The full solution with the answers of :data:`REFERENCE_CALLS` (all, or those in ``answers``) put in."""
    answers = REFERENCE_CALLS[assignment] if answers is None else answers
    nb = submission(assignment, {})
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = REFERENCE_CALLS[assignment][grade_id]
    return nb


def reference_call_groups(assignment):
    """The answers of :data:`REFERENCE_CALLS` in one notebook: a dependent answer is graded again with the
    solution's earlier answers in place of the failed ones (error carried forward), where its own
    reference call still fails, so every answer's test cells say why they failed."""
    return [tuple(a for a in answer_ids(assignment) if a in REFERENCE_CALLS[assignment])]


# Assignments 07-10 keep their tables in their own module.
from grading_support_v2 import REFERENCE_CALLS as _REFERENCE_CALLS_V2  # noqa: E402
from grading_support_v2 import WRONG_ANSWERS as _WRONG_ANSWERS_V2  # noqa: E402

from grading_support_v2 import ASSIGNMENTS_V2 as _V2  # noqa: E402

WRONG_ANSWERS.update(_WRONG_ANSWERS_V2)
REFERENCE_CALLS.update(_REFERENCE_CALLS_V2)
