"""The CPU-side plumbing of an engine step: a persistent batch and an incremental detokenizer.

``persistent_batch_update`` follows vLLM V1's GPU model runner: ``_update_states`` in
vllm/v1/worker/gpu_model_runner.py puts new or resumed requests into the rows that finished requests
left empty, smallest row first, and ``InputBatch.condense`` in vllm/v1/worker/gpu_input_batch.py
moves the last occupied rows into the holes that remain, so the live rows are always ``0 .. n-1``.

``detokenize_stream`` follows ``detokenize_incrementally`` in
vllm/transformers_utils/detokenizer_utils.py: decode the window ``[prefix_offset:]`` and the window
``[prefix_offset:read_offset]``, emit only the difference, and emit nothing while the text ends in
U+FFFD (a UTF-8 character whose bytes have not all arrived).

Book: chapter "Serving in production", sections "The persistent batch" and "Streaming text".
"""
from __future__ import annotations

from typing import NamedTuple

REPLACEMENT = "\ufffd"  # what a UTF-8 decoder with errors="replace" puts for incomplete bytes


class BatchUpdate(NamedTuple):
    """``new_rows``: the row given to each new request, in order; ``moves``: ``(from_row, to_row)``
    copies of condense, in order; ``num_rows``: occupied rows afterwards (rows ``0 .. num_rows-1``)."""

    new_rows: list
    moves: list
    num_rows: int


def persistent_batch_update(num_rows, finished, num_new=0) -> BatchUpdate:
    """Rows after one step of vLLM V1's persistent batch: fill holes, append, then condense.

    Parameters
    ----------
    num_rows : int
        Occupied rows before the step (rows ``0 .. num_rows-1``).
    finished : iterable of int
        Rows whose requests finished or were preempted this step, each in ``[0, num_rows)``.
    num_new : int
        New or resumed requests added this step.
    """
    holes = sorted(set(finished), reverse=True)  # descending: pop() gives the smallest
    if num_rows < 0 or num_new < 0:
        raise ValueError(f"num_rows and num_new must be >= 0, got {num_rows} and {num_new}")
    if any(not 0 <= r < num_rows for r in holes):
        raise ValueError(f"finished rows must lie in [0, {num_rows}), got {sorted(holes)}")
    filled = [holes.pop() for _ in range(min(num_new, len(holes)))]  # smallest holes first
    appended = list(range(num_rows, num_rows + num_new - len(filled)))  # then the end of the batch
    num_rows += len(appended)
    live = num_rows - len(holes)
    last, moves = num_rows - 1, []
    while holes:
        while last in holes:  # the largest occupied row
            last -= 1
        empty = holes.pop()  # the smallest hole
        if empty >= last:
            break
        moves.append((last, empty))
        last -= 1
    return BatchUpdate(filled + appended, moves, live)


def detokenize_stream(pieces) -> list:
    """Text emitted after each token by the prefix/read-offset rule, for a byte-level vocabulary.

    Parameters
    ----------
    pieces : sequence of bytes
        The bytes each generated token stands for, in order, shape ``(n,)``.

    Returns
    -------
    list of str, shape ``(n,)``
        The new text streamed after each token ("" while held back). Joined, it is the decoded text
        whenever the last token completes its character.
    """
    if any(not isinstance(p, bytes) for p in pieces):
        raise ValueError("every piece must be bytes (a byte-level token), got "
                         f"{sorted({type(p).__name__ for p in pieces})}")
    prefix, read, out = 0, 0, []
    for end in range(1, len(pieces) + 1):
        prefix_text = b"".join(pieces[prefix:read]).decode("utf-8", errors="replace")
        new_text = b"".join(pieces[prefix:end]).decode("utf-8", errors="replace")
        if len(new_text) <= len(prefix_text) or new_text.endswith(REPLACEMENT):
            out.append("")  # hold back: an unfinished character, or nothing new
            continue
        out.append(new_text[len(prefix_text):])
        prefix, read = read, end
    return out
