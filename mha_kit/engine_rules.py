"""Small rules read from inference engines' code, written out so that the book can compute with them.

* :func:`v0_preemption_mode`: vLLM V0's choice between swapping and recomputing a preempted group.
* :func:`cuda_graph_count`: how many CUDA graphs vLLM captures for its capture sizes.
* :func:`lm_head_step_share`: the share of a decode step's weight bytes that the output head is,
  with the full vocabulary or a trimmed one (FR-Spec's draft head).

Book: chapters "Scheduling and cache policy", "Attention backends in 2026", "Decoding and sampling".
"""


def v0_preemption_mode(num_running_seqs, forced=None):
    """How vLLM V0 preempts a sequence group: ``"recompute"`` or ``"swap"``.

    vLLM V0, ``vllm/core/scheduler.py``, ``Scheduler._preempt``: unless a mode is forced,
    a group with one running sequence is recomputed (its blocks freed, the sequence sent back to
    WAITING) and a group with several (beam search, ``n > 1``) is swapped to CPU memory, because
    ``_preempt_by_recompute`` supports one sequence only.

    Parameters
    ----------
    num_running_seqs : int
        Sequences of the group still running, ``SequenceGroup.get_max_num_running_seqs()``; >= 1.
    forced : {None, "recompute", "swap"}
        A mode the caller imposes (``preemption_mode``). Forcing ``"recompute"`` on a group of
        several running sequences raises ValueError: V0's ``_preempt_by_recompute`` asserts
        ``len(seqs) == 1``, so the engine would fail, not recompute.

    Returns
    -------
    str
        ``"recompute"`` or ``"swap"``.
    """
    if int(num_running_seqs) != num_running_seqs or num_running_seqs < 1:
        raise ValueError(f"a preempted group has at least one running sequence, got {num_running_seqs}")
    if forced not in (None, "recompute", "swap"):
        raise ValueError(f"forced must be None, 'recompute' or 'swap', got {forced!r}")
    if forced == "recompute" and num_running_seqs > 1:
        raise ValueError(f"V0 cannot recompute a group of {num_running_seqs} running sequences: "
                         "_preempt_by_recompute asserts len(seqs) == 1")
    if forced is not None:
        return forced
    return "recompute" if num_running_seqs == 1 else "swap"


def cuda_graph_count(capture_sizes, num_layers, max_num_seqs, uniform_decode_query_len=1):
    """Graphs vLLM captures in its default ``FULL_AND_PIECEWISE`` mode: ``(piecewise, full)``.

    Piecewise: every capture size, once per piece of the model, and the model is split at each
    attention call, so ``num_layers + 1`` pieces. Full: one graph per capture size ``x`` of a
    uniform decode batch, ``uniform_decode_query_len <= x <= max_num_seqs * uniform_decode_query_len``
    (``vllm/v1/worker/gpu_model_runner.py``, ``capture_model``).

    Parameters
    ----------
    capture_sizes : sequence of int
        Token counts captured, e.g. :func:`mha_kit.vllm_capture_sizes`; shape ``(n_sizes,)``.
    num_layers : int
        Attention layers of the model (>= 1).
    max_num_seqs : int
        The scheduler's ``max_num_seqs`` (>= 1).
    uniform_decode_query_len : int
        Tokens per sequence in a decode step: 1, or 1 + speculative tokens.

    Returns
    -------
    tuple of int
        ``(piecewise_graphs, full_graphs)``.
    """
    sizes = [int(s) for s in capture_sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"capture sizes must be positive token counts, got {list(capture_sizes)}")
    if num_layers < 1 or max_num_seqs < 1 or uniform_decode_query_len < 1:
        raise ValueError(f"num_layers, max_num_seqs and uniform_decode_query_len must be >= 1, got "
                         f"{num_layers}, {max_num_seqs}, {uniform_decode_query_len}")
    top = max_num_seqs * uniform_decode_query_len
    full = sum(1 for s in sizes if uniform_decode_query_len <= s <= top)
    return len(sizes) * (num_layers + 1), full


def lm_head_step_share(vocab_size, d_model, total_params, kept=None):
    """Share of the weights read in a decode step that belong to the output head.

    A decode step at small batch reads every weight once; the head is a ``(V, d)`` matrix. With
    a trimmed vocabulary only ``kept`` of its rows are read, so the step reads
    ``total_params - (V - kept) * d`` weights, of which ``kept * d`` are the head.

    Parameters
    ----------
    vocab_size : int
        ``V``, rows of the full head.
    d_model : int
        ``d``, the hidden size.
    total_params : int
        Parameters read per step with the full head (a tied embedding counted once: the step
        gathers a few of its rows as embeddings and reads all of them as the head).
    kept : int or None
        Rows kept (``None``: all ``V``).

    Returns
    -------
    float
        ``kept * d / (total_params - (V - kept) * d)``.
    """
    kept = vocab_size if kept is None else kept
    if not 1 <= kept <= vocab_size:
        raise ValueError(f"kept rows must be in [1, vocab_size={vocab_size}], got {kept}")
    if vocab_size * d_model > total_params:
        raise ValueError(f"the head ({vocab_size} x {d_model}) cannot exceed total_params={total_params}")
    return kept * d_model / (total_params - (vocab_size - kept) * d_model)

