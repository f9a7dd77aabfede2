"""Chapter "Prefix caching in depth", section prefix_caching-summarise: summarising when the window is full,
worked turn by turn by hand, against mk.conversation_prefill_tokens."""
import mha_kit as mk


def test_summarise_when_full_by_hand():
    m, window, turns, retained = 1_000, 32_000, 100, 2_000 + (3 + 1) * 1_000  # summary, 3 old turns, the new one
    context, total, cycles = 0, 0, 0
    for _ in range(turns):
        context += m
        if context > window:  # summarise: the prompt holds the summary, the last three turns and the new one
            context = retained // m * m
            total += context  # everything after the (unpinned) start misses once
            cycles += 1
        else:
            total += m  # the new turn only; the history hits the cache
    per_turn = mk.conversation_prefill_tokens(turns, m, window, compact_to=retained)
    assert int(per_turn.sum()) == total
    assert int((per_turn > m).sum()) == cycles
    assert cycles == 3  # turns 33, 60 and 87 pass the window (6 + 27 turns per cycle)
    assert total == 115_000
    assert cycles * (window - 3 * m) == 87_000  # the summariser reads roughly what it replaces
