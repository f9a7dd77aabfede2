"""Long-context evaluation: RULER's published scores, effective length, and an engine's context limit.

* :data:`RULER_RESULTS`: average scores over RULER's 13 tasks at 4K to 128K tokens, as published
  (Hsieh et al. 2024, Table 3; the README table of github.com/NVIDIA/RULER, 2024);
* :func:`effective_length`: the longest length up to which a model stays above RULER's threshold,
  Llama 2 7B's score at 4K (:data:`RULER_THRESHOLD`);
* :func:`derived_max_model_len`: the context vLLM derives from ``max_position_embeddings`` and
  ``rope_scaling`` (``_get_and_verify_max_len``), the first thing to check after scaling RoPE.

Book: chapter "Sparse patterns and long-context evaluation".
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from .config import check_positive_int

#: The lengths RULER reports, in tokens (4K ... 128K, K = 1024).
RULER_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)

#: RULER's threshold: Llama 2 7B's average score at 4K, its own trained context (Table 3).
RULER_THRESHOLD = 85.6


@dataclass(frozen=True)
class RulerResult:
    """One row of RULER's main table."""

    model: str  # as the table names it
    claimed_length: int  # tokens the model is advertised to take (K = 1024, M = 1024 K)
    scores: tuple  # average of the 13 tasks at each of RULER_LENGTHS, in percent

    def __post_init__(self):
        if len(self.scores) != len(RULER_LENGTHS):
            raise ValueError(f"{self.model}: expected {len(RULER_LENGTHS)} scores, got {len(self.scores)}")


_K, _M = 1024, 1024 * 1024

#: Rows of RULER's table (Hsieh et al. 2024, Table 3; github.com/NVIDIA/RULER README, 2024).
RULER_RESULTS = {r.model: r for r in (
    RulerResult("Gemini-1.5-pro", 1 * _M, (96.7, 95.8, 96.0, 95.9, 95.9, 94.4)),
    RulerResult("GPT-4-1106-preview", 128 * _K, (96.6, 96.3, 95.2, 93.2, 87.0, 81.2)),
    RulerResult("Llama3.1 (70B)", 128 * _K, (96.5, 95.8, 95.4, 94.8, 88.4, 66.6)),
    RulerResult("Qwen2 (72B)", 128 * _K, (96.9, 96.1, 94.9, 94.1, 79.8, 53.7)),
    RulerResult("Command-R-plus (104B)", 128 * _K, (95.6, 95.2, 94.2, 92.0, 84.3, 63.1)),
    RulerResult("GLM4 (9B)", 1 * _M, (94.7, 92.8, 92.1, 89.9, 86.7, 83.1)),
    RulerResult("Llama3.1 (8B)", 128 * _K, (95.5, 93.8, 91.6, 87.4, 84.7, 77.0)),
    RulerResult("GradientAI/Llama3 (70B)", 1 * _M, (95.1, 94.4, 90.8, 85.4, 80.9, 72.1)),
    RulerResult("Mixtral-8x22B (39B/141B)", 64 * _K, (95.6, 94.9, 93.4, 90.9, 84.7, 31.7)),
    RulerResult("Yi (34B)", 200 * _K, (93.3, 92.2, 91.3, 87.5, 83.2, 77.3)),
    RulerResult("Phi3-medium (14B)", 128 * _K, (93.3, 93.2, 91.1, 86.8, 78.6, 46.1)),
)}


def effective_length(scores, lengths=RULER_LENGTHS, threshold=RULER_THRESHOLD) -> int:
    """The longest of ``lengths`` up to which every score exceeds ``threshold``; 0 if the first does not.

    RULER's effective length (sec. 4): the length a model handles as well as Llama 2 7B handles
    4K. A model above the threshold at every tested length gets the last length (RULER writes
    ">128K"). Scores must follow ``lengths``, shortest first.
    """
    if len(scores) != len(lengths):
        raise ValueError(f"expected one score per length: {len(scores)} scores, {len(lengths)} lengths")
    if list(lengths) != sorted(lengths):
        raise ValueError(f"lengths must be sorted shortest first, got {list(lengths)}")
    best = 0
    for length, score in zip(lengths, scores):
        if score <= threshold:
            break
        best = length
    return best


def derived_max_model_len(max_position_embeddings, rope_scaling=None) -> int:
    """The context length vLLM allows for a config: positions times ``rope_scaling``'s factor.

    vLLM's ``_get_and_verify_max_len``: start from ``max_position_embeddings``; with a
    ``rope_scaling`` whose type is not ``"su"``, ``"longrope"`` or ``"llama3"`` (those configs
    already state the extended length), use ``original_max_position_embeddings`` for YaRN and
    multiply by ``factor``. A larger ``--max-model-len`` is refused.
    """
    length = check_positive_int("max_position_embeddings", max_position_embeddings)
    if not rope_scaling:
        return length
    rope_type = rope_scaling.get("rope_type", rope_scaling.get("type"))
    if rope_type in ("su", "longrope", "llama3"):
        return length
    factor = rope_scaling.get("factor", 1.0)
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or factor <= 0:
        raise ValueError(f"rope_scaling factor must be a positive number, got {factor!r}")
    if rope_type == "yarn":
        length = check_positive_int("original_max_position_embeddings", rope_scaling["original_max_position_embeddings"])
    return int(length * factor)
