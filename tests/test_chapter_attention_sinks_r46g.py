"""Section attention_sinks-gated-attention: where the sink's growing score comes from.

Checks that the section no longer says a large score needs a large key, that it gives the angle (Gu et al., as an overview reports it)
and the massive activations in the residual stream (Sun et al.) with their citations, and recomputes the sink
scores ln s + ln(p / (1 - p)) of its table by hand.
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("attention_sinks")
LABEL = "attention_sinks-gated-attention"


def test_mechanism_text():
    text = chapter_outputs.section(NB, LABEL)
    assert "a large dot product means a large key" not in text
    assert "huge key score" not in text
    assert "angle" in text and "residual stream" in text
    chapter_outputs.assert_cited(text, ["gu2024sinkemerges", "sun2024massive", "qiu2025gated", "alphaxiv_gu2024overview"])
    # the unread locator is gone; the 100,000x is an example, and the delimiter carries it too
    assert "gu2024sinkemerges{§3.1}` (" not in text and "up to 100,000" not in text
    assert "e.g. 100,000 times" in text and "first\ndelimiter" in text
    for ref in ("attention_sinks-not-positions", "attention_sinks-learned-sink-logits"):
        assert "{ref}`" + ref + "`" in text and ref in chapter_outputs.book_labels()


def test_sink_scores():
    assert chapter_outputs.glued(NB, "sink_logit_1k") == f"{math.log(1024) + math.log(0.99 / 0.01):.1f}" == "11.5"
    assert chapter_outputs.glued(NB, "sink_logit_1m") == f"{math.log(2**20) + math.log(99):.1f}" == "18.5"
