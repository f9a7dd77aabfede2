"""Every chapter that teaches ends with a follow-up chain in the one format the flashcards read.

The format (book: the chain at the end of each chapter; tools/followup_cards.py collects it): a label
``(<chapter>-chain)=``, the heading "Follow-up chain", then three dropdown admonitions of class
``followup`` titled "[E] Q1.", "[M] Q2.", "[H] Q3.", each with a strong answer, what the interviewer
listens for and the trap, in that order.
"""
import re

import pytest
from booktoc import content_chapters, markdown

CHAPTERS = content_chapters()


def test_every_content_part_has_chapters():
    assert len(CHAPTERS) >= 23, CHAPTERS  # 7 + 5 + 3 chapters, 5 of "Serving in 2026" and 5 of "Long context"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_ends_with_a_follow_up_chain(chapter):
    label = f"({chapter}-chain)=\n## Follow-up chain\n"
    last = markdown(chapter)[-1]
    assert label in last, f"book/{chapter}.ipynb: the last markdown cell holds no follow-up chain"
    last = last[last.index(label):]
    assert "\n#" not in last[len(label):], f"book/{chapter}.ipynb: a section follows the chain"
    titles = re.findall(r"^:::\{admonition\} (.*)\n:class: (.*)$", last, flags=re.M)
    assert [t[:6] for t, _ in titles] == ["[E] Q1", "[M] Q2", "[H] Q3"]
    assert all(cls == "dropdown followup" for _, cls in titles)
    for block in last.split(":::{admonition}")[1:]:
        assert block.index("**Strong answer.**") < block.index("**Listening for.**") < block.index("**Trap.**")
