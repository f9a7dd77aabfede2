"""The question index (book/question_index.ipynb): every question is tagged, sourced and linked.

The page lists interview questions under one heading per topic. Each question is one numbered
list item::

    17. **[M]** <the question> {cite:p}`key,key{page}`\\
        Answer: {ref}`label`          (or {doc}`chapter` when the whole chapter is the answer)

(a source's post-text in braces names the page of a collection cited by one entry; an answer that
spans two sections names both, ``Answer: {ref}`label`, {ref}`other```, the first one the main answer;
these tests check every target)
optionally followed by a note on a source's wrong answer. These tests parse the source, not the
built page (tests/test_site.py checks the built links): at least 200 questions, each
with a difficulty tag, a topic, sources that references.bib holds, and links whose targets exist
in the book's sources, so a question can never point at a label that no chapter defines.
"""
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from booktoc import REPO_ROOT, markdown, toc_docnames

CHAPTER = "question_index"
BUILT_HEADING = "## How this index was built"
ITEM = re.compile(r"^(?P<number>\d+)\. \*\*\[(?P<tag>[EMH])\]\*\* (?P<text>.+?) "
                  r"\{cite:[pt]\}`(?P<keys>[^`]+)`\\$")
ANSWER = re.compile(r"^ +Answer: \{(?P<kind>ref|doc)\}`(?P<target>[^`<>]+)`"
                    r"(?P<also>(?:, \{(?:ref|doc)\}`[^`<>]+`)*)(\\)?$")
LABEL = re.compile(r"^\((?P<label>[A-Za-z0-9_.:-]+)\)=\s*$", re.M)
BIB_KEYS = set(re.findall(r"^@\w+\{([^,\s]+),", (REPO_ROOT / "references.bib").read_text(encoding="utf-8"), re.M))


@dataclass(frozen=True)
class Question:
    number: int
    tag: str
    text: str
    topic: str
    sources: tuple  # the citations as written, "key" or "key{page}"
    kind: str  # "ref" or "doc"
    target: str
    also: tuple = ()  # further links of a two-section answer, as (kind, target)


def parse(cells):
    """The questions of the index's markdown cells, in page order.

    Raises ValueError naming the line when a numbered item lacks its tag, its sources or its
    answer link, so that a malformed question fails loudly instead of being skipped."""
    questions, topic = [], None
    for text in cells:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("## "):
                topic = line[3:].strip()
            if not re.match(r"^\d+\. ", line):
                continue
            item = ITEM.match(line)
            if item is None:
                raise ValueError(f"question item without a tag [E]/[M]/[H] or sources: {line!r}")
            answer = ANSWER.match(lines[i + 1]) if i + 1 < len(lines) else None
            if answer is None:
                raise ValueError(f"question {item['number']} has no 'Answer: {{ref}}/{{doc}}' line after it")
            if topic is None:
                raise ValueError(f"question {item['number']} comes before any topic heading")
            questions.append(Question(int(item["number"]), item["tag"], item["text"], topic,
                                      tuple(k.strip() for k in item["keys"].split(",")),
                                      answer["kind"], answer["target"],
                                      tuple(re.findall(r"\{(ref|doc)\}`([^`<>]+)`", answer["also"]))))
    return questions


def bib_key(source):
    """The references.bib key of a citation ``key`` or ``key{page}``."""
    return re.sub(r"\{[^}]*\}", "", source).strip()


def defined_labels(book=REPO_ROOT / "book"):
    """Every MyST label ``(label)=`` in the book's notebooks and markdown pages."""
    import json
    labels = set()
    for path in sorted(book.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                labels |= set(LABEL.findall("".join(cell["source"])))
    for path in sorted(book.glob("*.md")):
        labels |= set(LABEL.findall(path.read_text(encoding="utf-8")))
    return labels


CELLS = markdown(CHAPTER)
QUESTIONS = parse(CELLS)
TOPICS = sorted({q.topic for q in QUESTIONS})


def test_the_index_holds_at_least_200_questions():
    assert len(QUESTIONS) >= 200, len(QUESTIONS)


def test_questions_are_numbered_one_to_n_in_page_order():
    assert [q.number for q in QUESTIONS] == list(range(1, len(QUESTIONS) + 1))


def test_each_question_appears_once():
    seen = {}
    for q in QUESTIONS:
        key = " ".join(q.text.casefold().split())
        assert key not in seen, f"Q{q.number} repeats Q{seen[key]}: merge them and list both sources"
        seen[key] = q.number


def test_every_question_has_a_topic_with_a_label():
    text = "\n".join(CELLS)
    assert len(TOPICS) >= 10, TOPICS
    for topic in TOPICS:
        assert re.search(r"^\(question_index-[a-z0-9-]+\)=\n## " + re.escape(topic) + "$", text, re.M), topic
        assert topic != BUILT_HEADING[3:], "a question sits under the closing section"


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: f"Q{q.number}")
def test_question_sources_are_in_the_bibliography(q):
    assert q.sources, f"Q{q.number} names no source"
    missing = [source for source in q.sources if bib_key(source) not in BIB_KEYS]
    assert not missing, f"Q{q.number}: {missing} not in references.bib"
    keys = [bib_key(source) for source in q.sources]
    # the bibliography shows one citation per key: two pages of one collection share one key{page; page}
    assert len(set(keys)) == len(keys), f"Q{q.number} cites a key twice: {keys}"


def test_every_ref_target_is_a_label_of_the_book():
    labels = defined_labels()
    missing = sorted({t for q in QUESTIONS for k, t in ((q.kind, q.target), *q.also) if k == "ref"} - labels)
    assert not missing, f"questions link to labels no chapter defines: {missing}"


def test_every_doc_target_is_a_page_of_the_book():
    pages = {name.split("/", 1)[1] for name in toc_docnames() if name.startswith("book/")}
    missing = sorted({t for q in QUESTIONS for k, t in ((q.kind, q.target), *q.also) if k == "doc"} - pages)
    assert not missing, f"questions link to chapters that are not in _toc.yml: {missing}"


def test_the_page_ends_with_how_it_was_built():
    assert CELLS[-1].startswith(BUILT_HEADING), CELLS[-1][:60]
    for word in ("**Sources.**", "**Merging.**", "**Tags.**", "**Links.**"):
        assert word in CELLS[-1]


def test_each_tag_is_used():
    assert {q.tag for q in QUESTIONS} == {"E", "M", "H"}


def test_sources_include_chinese_and_english_collections():
    bib = (REPO_ROOT / "references.bib").read_text(encoding="utf-8")
    keys = {bib_key(s) for q in QUESTIONS for s in q.sources}
    chinese = {k for k in keys if re.search(r"@misc\{" + re.escape(k) + r",[^@]*in Chinese", bib)}
    assert chinese and keys - chinese, "the index draws on collections in both languages"


# --- the parser itself --------------------------------------------------------------------------

GOOD = ("(question_index-x)=\n## Topic\n\n"
        "1. **[E]** What is a key? {cite:p}`qa_kalyanks`\\\n"
        "   Answer: {doc}`first_principles`\n")


def test_the_parser_reads_a_well_formed_item():
    (q,) = parse([GOOD])
    assert (q.number, q.tag, q.topic, q.sources, q.kind, q.target) == (
        1, "E", "Topic", ("qa_kalyanks",), "doc", "first_principles")


def test_a_page_of_a_collection_is_cited_by_its_key():
    (q,) = parse([GOOD.replace("`qa_kalyanks`", "`qa_faisal{serving grill},qa_kalyanks`")])
    assert [bib_key(s) for s in q.sources] == ["qa_faisal", "qa_kalyanks"]
    assert bib_key("qa_faisal{serving grill}") in BIB_KEYS


def test_the_parser_reads_an_answer_with_two_links():
    (q,) = parse([GOOD.replace("{doc}`first_principles`", "{doc}`first_principles`, {ref}`kv_cache_basics-why-not-q`")])
    assert (q.kind, q.target, q.also) == ("doc", "first_principles", (("ref", "kv_cache_basics-why-not-q"),))


@pytest.mark.parametrize("broken, problem", [
    (GOOD.replace("**[E]** ", ""), "without a tag"),
    (GOOD.replace(" {cite:p}`qa_kalyanks`", ""), "without a tag"),
    (GOOD.replace("   Answer: {doc}`first_principles`\n", ""), "no 'Answer"),
    (GOOD.replace("## Topic\n", ""), "before any topic"),
])
def test_the_parser_rejects_a_malformed_item(broken, problem):
    with pytest.raises(ValueError, match=problem):
        parse([broken])


def test_a_missing_label_is_found(tmp_path):
    (tmp_path / "a.md").write_text("(present-label)=\n# A\n", encoding="utf-8")
    assert defined_labels(tmp_path) == {"present-label"}
    assert "absent-label" not in defined_labels(tmp_path)


def test_the_page_is_in_the_reference_part():
    assert f"book/{CHAPTER}" in toc_docnames()
    assert Path(REPO_ROOT / "book" / f"{CHAPTER}.ipynb").exists()
