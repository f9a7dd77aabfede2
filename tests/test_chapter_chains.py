"""Every chapter that teaches ends with a follow-up chain in the one format the flashcards read.

The format (book: the chain at the end of each chapter; website/ext/followup_cards.py collects it): a label
``(<chapter>-chain)=``, the heading "Follow-up chain", then three dropdown admonitions of class
``followup`` titled "[E] Q1.", "[M] Q2.", "[H] Q3.", each with a strong answer, what the interviewer
listens for and the trap, in that order.

"Listening for" is the rubric: a list of 2 to 5 beats, each line ``- <beat>: "<anchor>"``, where the
anchor is a short plain phrase that appears verbatim (ignoring case and line breaks) in the strong
answer it grades. The answer scripts of the chapter "How to answer it" carry the same rubric right
after each script, with the anchors in the script.
"""
import re

import pytest
from booktoc import content_chapters, markdown

CHAPTERS = content_chapters()
RUBRIC_LINE = re.compile(r'^- (?P<beat>[^"\n]+?): "(?P<anchor>[^"\n]+)"$')
MARKUP = re.compile(r"[`{}$*\\]")  # glue, roles, maths, emphasis: an anchor is plain text
SCRIPTS = ("## The 30-second answer", "## The 2-minute answer")  # the answer scripts of book/answering


def _plain(text):
    """Case and whitespace do not count when an anchor is looked up in an answer."""
    return " ".join(text.split()).casefold()


def rubric_problems(answer, rubric):
    """What is wrong with a rubric (the text after **Listening for.**) for ``answer``; [] when fine."""
    lines = [line.strip() for line in rubric.strip().splitlines()]
    if not 2 <= len(lines) <= 5:
        return [f"a rubric has 2 to 5 beats, this one has {len(lines)}: {lines}"]
    problems = []
    for line in lines:
        match = RUBRIC_LINE.match(line)
        if match is None:
            problems.append(f'not a beat line of the form - <beat>: "<anchor>": {line!r}')
        elif MARKUP.search(match["anchor"]):
            problems.append(f"anchor {match['anchor']!r} has markup; anchors are plain text")
        elif _plain(match["anchor"]) not in _plain(answer):
            problems.append(f"anchor {match['anchor']!r} ({match['beat']}) is not in its answer")
    return problems


def chain_blocks(chapter):
    """``(title, strong answer, rubric)`` of each question of the chapter's chain."""
    last = markdown(chapter)[-1]
    blocks = []
    for block in last.split(":::{admonition}")[1:]:
        title = block.splitlines()[0].strip()
        answer = block.split("**Strong answer.**", 1)[1].split("**Listening for.**", 1)[0]
        rubric = block.split("**Listening for.**", 1)[1].split("**Trap.**", 1)[0]
        blocks.append((title, answer, rubric))
    return blocks


def script_blocks():
    """``(title, script, rubric)`` of each answer script: the quoted lines, then the rubric after them."""
    text = "\n".join(markdown("answering"))
    blocks = []
    for title in SCRIPTS:
        section = text.split(title, 1)[1].split("\n## ", 1)[0]
        script = "\n".join(line[1:] for line in section.splitlines() if line.startswith(">"))
        after = section.split("**Listening for.**", 1)
        rubric = after[1].split("\n\n", 2)[0] if len(after) == 2 else ""
        blocks.append((title, script, rubric.strip("\n")))
    return blocks


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


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chain_answer_has_a_rubric_found_in_it(chapter):
    for title, answer, rubric in chain_blocks(chapter):
        assert rubric.startswith("\n- "), f"book/{chapter}.ipynb, {title}: the rubric starts on the next line"
        assert not rubric_problems(answer, rubric), (f"book/{chapter}.ipynb, {title}", rubric_problems(answer, rubric))


@pytest.mark.parametrize("title, script, rubric", script_blocks(), ids=[t for t in SCRIPTS])
def test_every_answer_script_has_a_rubric_found_in_it(title, script, rubric):
    assert script, f"book/answering.ipynb: {title} has no quoted script"
    assert rubric, f"book/answering.ipynb: {title} has no rubric after its script"
    assert not rubric_problems(script, rubric), rubric_problems(script, rubric)


def test_beats_an_interviewer_listens_for_are_there():
    beats = {m["beat"] for chapter in CHAPTERS for *_, rubric in chain_blocks(chapter)
             for m in map(RUBRIC_LINE.match, rubric.strip().splitlines()) if m}
    beats |= {m["beat"] for *_, rubric in script_blocks() for m in map(RUBRIC_LINE.match, rubric.splitlines()) if m}
    for beat in ("what heads buy", "cache scales with h_kv, not h", "weights vs cache at batch 1", "precision stated"):
        assert beat in beats, beat


# --- the check itself must be able to fail ------------------------------------------------------

ANSWER = "The cache scales with h_kv, and at batch 1 the weights dominate."


def test_a_rubric_whose_anchors_are_in_the_answer_passes():
    rubric = '- cache scales with h_kv, not h: "scales with h_kv"\n- weights vs cache at batch 1: "WEIGHTS  dominate"\n'
    assert rubric_problems(ANSWER, rubric) == []


def test_an_anchor_missing_from_its_answer_fails():
    rubric = '- cache scales with h_kv, not h: "scales with h_kv"\n- precision stated: "in bf16"\n'
    assert rubric_problems(ANSWER, rubric) == ["anchor 'in bf16' (precision stated) is not in its answer"]


@pytest.mark.parametrize("rubric, problem", [
    ('- only one beat: "h_kv"', "a rubric has 2 to 5 beats, this one has 1"),
    ('- a: "h_kv"\n- b: "the"\n- c: "at"\n- d: "cache"\n- e: "batch"\n- f: "weights"', "this one has 6"),
    ('- cache: "h_kv"\nThe weights dominate.', "not a beat line"),
    ('- cache: "h_kv"\n- weights: "{glue:text}`weights`"', "has markup"),
    ('- cache: "h_kv"\n- maths: "$h_{kv}$"', "has markup"),
])
def test_a_malformed_rubric_fails(rubric, problem):
    problems = rubric_problems(ANSWER, rubric)
    assert problems and problem in problems[0], problems
