"""Designed answers of 03_kv_cache for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("bits_not_bytes", "kv_bytes_read_answer", "return -(-elements * bits // 8)", "return elements * bits",
     {"kv_bytes_read_llama3_70b_8k"}),
    ("gqa_counted_as_mha", "cache_bytes_per_token_answer", "2 * cfg.num_kv_heads", "2 * cfg.num_heads",
     {"cache_per_token_llama3_8b"}),
    ("mla_without_rotary_key", "mla_cache_answer", "(cfg.kv_lora_rank + cfg.qk_rope_head_dim)",
     "cfg.kv_lora_rank", {"mla_cache_deepseek_v2"}),
    ("max_context_as_float", "max_context_answer", "memory_bytes * 8 // bits_per_token",
     "memory_bytes * 8 / bits_per_token", {"max_context_llama3_8b_16gib"}),
    # an int of a float division: right for 16 GiB, wrong for the visible memory past 2**53 bytes
    ("max_context_int_of_float", "max_context_answer", "memory_bytes * 8 // bits_per_token",
     "int(memory_bytes * 8 / bits_per_token)", {"max_context_llama3_8b_16gib"}),
    # rounds down: right for whole bytes, wrong for the visible 3-bit numbers
    ("bytes_rounded_down", "kv_bytes_read_answer", "return -(-elements * bits // 8)", "return elements * bits // 8",
     {"kv_bytes_read_llama3_70b_8k"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "bits_not_bytes": "bits_vs_bytes",
    "gqa_counted_as_mha": "h_vs_h_kv",
    "mla_without_rotary_key": "the shared rotary key (qk_rope_head_dim) is cached too",
    "max_context_as_float": "as an int, got float",
    "max_context_int_of_float": "a float division loses whole tokens",
    "bytes_rounded_down": "rounding",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
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
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}

#: Answers written against the grader: (name, {answer grade_id: new source}, answers whose tests are
#: lost, words of the reason in a failing cell's error, or None). tests/test_grading_hostile.py.
HOSTILE = [
    ("returns_mk_cache_per_token",
     {"cache_bytes_per_token_answer": "def cache_bytes_per_token(cfg, bits=16):\n    return mk.kv_cache_bytes_per_token(cfg, bits)"},
     {"cache_bytes_per_token_answer"}, "mk.kv_cache_bytes_per_token is not available in 03_kv_cache"),
]

HONEST_03 = {
    "kv_bytes_read_answer": '''from dataclasses import dataclass
from typing import Optional


@dataclass
class Count:
    elements: int
    bits: int
    note: Optional[str] = None

    def bytes(self) -> int:
        return -(-self.elements * self.bits // 8)  # whole bytes, rounded up


def kv_bytes_read(num_kv_heads: int, head_dim: int, context_len: int, bits: int = 16) -> int:
    return Count(context_len * 2 * num_kv_heads * head_dim, bits).bytes()''',
}

#: Honest answers written in other ways than the solution's: (name, {answer grade_id: new source},
#: (answer grade_id, source of an extra cell after it) or None); each must score full marks.
HONEST = [
    ("honest_dataclass", HONEST_03, ("kv_bytes_read_answer", "print('my own notes')")),
]
