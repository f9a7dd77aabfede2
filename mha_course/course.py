"""The course's manifest: its assignments, what each allows, and which of this package's files run where.

:data:`COURSE` lists the assignments and what each allows; every other part of the course reads it
(and the assignments' folders under ``solutions/``). :data:`KERNEL_SIDE` and :data:`BROWSER_SIDE`
name the folders and files of ``mha_course`` that run in a kernel: the folder is the rule, no list of
modules is kept by hand (:func:`package_files`, :func:`kernel_side_modules`).

Pure: the standard library only, so that it runs in every kernel of the course, the browser's too.
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: What every assignment's grading kernel has of ``mha_kit``: configs, presets, toy data, units.
BASE_HELPERS = ("AttentionConfig", "LatentAttentionConfig", "PRESETS", "get_preset", "AttentionWeights",
                "init_weights", "toy_example", "TOY_SEED", "DTYPE_BITS", "dtype_bits", "format_bytes",
                "format_int", "format_percent", "roofline",
                # the model facts record that PRESETS is read from (sources, windows): facts, no answers
                "MODEL_FACTS", "ModelFacts", "get_model_facts")


@dataclass(frozen=True)
class Assignment:
    """One assignment of the course manifest :data:`COURSE`.

    ``helpers``: the ``mk.`` names its questions may use beyond :data:`BASE_HELPERS` (the grading
    kernel's graded kit exposes exactly these); ``answers``: ``{mk name: question}`` for the
    references that answer a question (calling one fails that question, saying why);
    ``builds_on``: ``{answer grade_id: (answer grade_ids)}`` when a question calls the learner's
    own answers to earlier questions; when one of those fails its own tests, the question is graded
    again with the solution's answer in its place (error carried forward, :mod:`mha_course.plugins.carry`).
    """

    helpers: tuple = ()
    answers: dict = field(default_factory=dict)
    builds_on: dict = field(default_factory=dict)


#: The course manifest: every assignment, in the order the book teaches them (folders under solutions/).
COURSE = {
    "01_shapes": Assignment(answers={"split_heads": "Q3", "merge_heads": "Q4"}),
    "02_params_compute": Assignment(answers={
        "projection_params": "Q1", "projection_params_by_matrix": "Q1", "attention_macs": "Q2",
        "sequence_attention_macs": "Q2", "projection_macs": "Q2", "score_count": "Q3"}),
    "03_kv_cache": Assignment(helpers=("kv_elements_per_token",), answers={
        "kv_bytes_read": "Q1", "kv_cache_bytes_per_token": "Q2 and Q3", "elements_to_bytes": "Q1 to Q4",
        "kv_cache_bytes": "Q4", "max_context_tokens": "Q5"}),
    "04_implement_attention": Assignment(
        helpers=("split_heads", "merge_heads"),
        answers={"softmax": "Q1", "causal_mask": "Q2", "scaled_dot_product_attention": "Q3",
                 "decode_attention": "Q3", "multi_head_attention": "Q4", "cached_attention": "Q4",
                 "grouped_attention": "Q5"},
        builds_on={"attention_answer": ("softmax_answer",),
                   "multi_head_answer": ("softmax_answer", "causal_mask_answer", "attention_answer"),
                   "gqa_answer": ("softmax_answer",)}),
    "05_decoding": Assignment(
        helpers=("KVCache", "split_heads", "merge_heads", "softmax", "masked_softmax", "causal_mask", "scaled_dot_product_attention",
                 "grouped_attention", "decode_attention"),
        answers={"cached_attention": "Q1", "multi_head_attention": "Q1", "attention_macs": "Q2",
                 "arithmetic_intensity": "Q3", "kv_bytes_read": "Q3"}),
    "06_spot_the_bug": Assignment(
        helpers=("softmax", "causal_mask"),
        answers={"scaled_dot_product_attention": "Q1 and Q2", "grouped_attention": "Q3", "merge_heads": "Q4",
                 "kv_cache_bytes": "Q5", "kv_cache_bytes_per_token": "Q5", "kv_elements_per_token": "Q5"}),
    "07_flash_attention": Assignment(
        answers={"online_softmax_update": "Q1 and Q2", "flash_attention": "Q3", "scaled_dot_product_attention": "Q3",
                 "softmax": "Q1 to Q3", "masked_softmax": "Q3", "score_matrix_bytes": "Q4", "score_count": "Q4",
                 "elements_to_bytes": "Q4", "merge_softmax_states": "Q2", "flash_decoding": "Q3",
                 "flash_decoding_partials": "Q3"},
        builds_on={"blockwise_answer": ("block_state_answer", "merge_states_answer")}),
    "08_rope": Assignment(
        helpers=("softmax", "masked_softmax", "causal_mask", "scaled_dot_product_attention"),
        answers={"rope": "Q1", "rope_scores": "Q2 and Q3", "rotary_attention": "Q4"},
        builds_on={"rope_score_answer": ("rope_answer",), "distance_answer": ("rope_answer",),
                   "rope_attention_answer": ("rope_answer",)}),
    "09_masks": Assignment(
        helpers=("softmax", "masked_softmax", "scaled_dot_product_attention", "split_heads", "merge_heads"),
        answers={"multi_head_attention": "Q1", "grouped_attention": "Q1", "sliding_window_mask": "Q2",
                 "padding_mask": "Q3", "causal_mask": "Q3 and Q4"}),
    "10_serving": Assignment(
        helpers=("kv_elements_per_token",),
        answers={"cache_slots": "Q1 and Q2", "kv_cache_bytes": "Q3", "kv_cache_bytes_per_token": "Q3 and Q4",
                 "elements_to_bytes": "Q3 and Q4", "quantized_cache_bytes": "Q4", "max_context_tokens": "Q3"}),
    "11_serving_2026": Assignment(
        # the GPU records and the weight count the cases and Q4 read (the count uses projection_params);
        # E4M3 rounding in numpy alone for Q6 (round_minifloat reads its formats from MINIFLOATS)
        helpers=("GPUS", "Accelerator", "dense_decoder_params", "projection_params", "round_minifloat", "MINIFLOATS"),
        answers={"speculative_expected_tokens": "Q1", "speculative_speedup": "Q1",
                 "PrefixBlockCache": "Q2", "RadixPrefixCache": "Q2", "serve_stream": "Q2", "computed_tokens": "Q2",
                 "hit_rates_by_capacity": "Q2", "kv_cache_bytes": "Q3 and Q5", "kv_cache_bytes_per_token": "Q3 and Q5",
                 "kv_elements_per_token": "Q3 and Q5", "elements_to_bytes": "Q3 and Q5", "max_context_tokens": "Q3",
                 "roofline_step": "Q4", "RooflineStep": "Q4", "simulate_batching": "Q4 and Q7", "prefill_seconds": "Q4",
                 "prefill_flops": "Q4", "kv_transfer_seconds": "Q5", "quantize_e4m3": "Q6", "quantize_kv": "Q6",
                 "quantize_kv_codes": "Q6", "kv_scale_count": "Q6", "batching_steps": "Q7",
                 "summarize_latencies": "Q7"}),
    "12_long_context": Assignment(
        answers={"rope_inv_freq": "Q1 and Q7", "stretch_per_pair": "Q1 and Q7", "SinkCache": "Q2 and Q6", "sink_mask": "Q2",
                 "sink_decode_step": "Q2", "merge_softmax_states": "Q3", "online_softmax_update": "Q3",
                 "flash_decoding": "Q3", "flash_decoding_partials": "Q3", "soft_cap": "Q4", "soft_cap_grad": "Q4",
                 "layout_kv_bytes": "Q5", "LayerLayout": "Q5", "LAYER_LAYOUTS": "Q5", "hybrid_cache_bytes": "Q5",
                 "kv_cache_bytes": "Q5 and Q6", "kv_cache_bytes_per_token": "Q5 and Q6",
                 "kv_elements_per_token": "Q5 and Q6", "elements_to_bytes": "Q5 and Q6"}),
    "13_plan_deployment": Assignment(
        # the GPU records and the dense weight count the cases and Q2, Q3 and Q6 read (the count uses projection_params)
        helpers=("GPUS", "Accelerator", "dense_decoder_params", "projection_params"),
        answers={"kv_cache_bytes_per_gpu": "Q1 to Q3 and Q6", "kv_elements_per_token_per_gpu": "Q1 to Q3 and Q6",
                 "kv_heads_per_gpu": "Q1 to Q3 and Q6", "kv_cache_bytes": "Q1 to Q3 and Q6",
                 "kv_cache_bytes_per_token": "Q1 to Q3 and Q6", "kv_elements_per_token": "Q1 to Q3 and Q6",
                 "elements_to_bytes": "Q1 to Q3 and Q6", "plan_deployment": "Q2, Q3 and Q6",
                 "DeploymentPlan": "Q2, Q3 and Q6", "roofline_step": "Q2", "RooflineStep": "Q2",
                 "experts_touched": "Q4", "params_read_per_step": "Q4",
                 "speculative_expected_tokens": "Q5", "speculative_speedup": "Q5",
                 "decode_memory_floor": "Q2 and Q6", "cache_crossover_batch": "Q3", "gpus_for_rate": "Q6",
                 "RateFleet": "Q6"},
        builds_on={"decode_answer": ("cache_answer",), "crossover_answer": ("cache_answer",),
                   "gpus_answer": ("cache_answer",)}),
}

#: The assignments, in the order the book teaches them (folder names under solutions/).
ASSIGNMENTS = tuple(COURSE)

#: The course's own files in an assignment's folder, beside its notebook: the judge's questions
#: (``grading_questions.py``: the reference and the messages of each question id, loaded by the
#: grading process) and the designed answers the tests grade (``grading_answers.py``: mistakes,
#: reference calls, attacks). nbgrader keeps them out of the release and out of the folder the
#: grading kernel runs in (``CourseDirectory.ignore`` in ``nbgrader_config.py``).
GRADING_FILES = ("grading_questions.py", "grading_answers.py")


def _find_course_root():
    """The repository root: the folder holding ``nbgrader_config.py`` and ``solutions/``.

    The package's parent folder when installed in editable mode (the normal case); otherwise the
    current folder or the nearest folder above it that holds the course.
    """
    here = Path.cwd().resolve()
    for folder in (Path(__file__).resolve().parent.parent, here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "solutions").is_dir():
            return folder
    return Path(__file__).resolve().parent.parent


#: The repository root: the nbgrader course that this package belongs to.
REPO_ROOT = _find_course_root()


def assignment_module(assignment, stem):
    """The module ``solutions/<assignment>/<stem>.py`` (a name of :data:`GRADING_FILES`), imported once.

    The grading process imports ``grading_questions`` (:mod:`mha_course.judge.questions` does, for
    every assignment); the tests import ``grading_answers``. Raises ``ValueError`` for an assignment
    that is not in :data:`COURSE` or a file that is not a grading file, and ``FileNotFoundError``
    naming the missing file.
    """
    if assignment not in COURSE:
        raise ValueError(f"unknown assignment {assignment!r}; known: {', '.join(ASSIGNMENTS)}")
    if f"{stem}.py" not in GRADING_FILES:
        raise ValueError(f"{stem}.py is not one of the grading files {GRADING_FILES}")
    name = f"_course_{assignment}_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    path = REPO_ROOT / "solutions" / assignment / f"{stem}.py"
    if not path.is_file():
        raise FileNotFoundError(f"assignment {assignment} has no {path.name} in {path.parent}")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before it runs: dataclasses and pickle look a module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


#: This package's folder.
PACKAGE = Path(__file__).resolve().parent
#: What a test cell imports, and so what a grading kernel's graded kit copies beside its ``mha_kit``:
#: the folder ``kernel/`` whole, and the format it sends its results in (``wire.py``).
KERNEL_SIDE = ("kernel", "wire.py")
#: What runs in the learner's own kernel, the browser edition's included: the kernel side, the judge
#: that judges a test cell at once there, and what they read (the manifest, the notebook conventions).
#: None of it imports more than the standard library, numpy, IPython and ``mha_kit`` (``tests/test_layers.py``).
BROWSER_SIDE = ("course.py", "notebook.py", "wire.py", "judge", "kernel")


def package_files(parts=KERNEL_SIDE):
    """The ``.py`` files of ``parts`` (folders and files of this package), as paths relative to the package's
    parent (``mha_course/kernel/cases.py``), sorted; a folder counts whole."""
    files = set()
    for part in parts:
        path = PACKAGE / part
        files |= set(path.rglob("*.py")) if path.is_dir() else {path}
    return sorted(p.relative_to(PACKAGE.parent).as_posix() for p in files if "__pycache__" not in p.parts)


def kernel_side_modules(parts=KERNEL_SIDE):
    """The dotted names of the modules of ``parts`` (default: what a test cell imports), sorted."""
    names = [path.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for path in package_files(parts)]
    return sorted(names)
