"""Sphinx extension: the chapters' follow-up chains as flashcards for the drills page.

Every admonition with the class ``followup`` (the chain format: a title ``[E] Q1. ...`` and the
parts "Strong answer", "Listening for", "Trap") becomes one card. "Listening for" is the rubric, a
bullet list of ``<beat>: "<anchor>"`` lines: the card keeps it in its answer, marked with the class
``mha-rubric`` for the page's style sheet, and as a list of ``{"beat", "anchor"}`` records. Cards
are read from each page's doctree after Sphinx resolved it (glued numbers, references and
all), as the page is written, and put in the reading order of the table of contents, and written to ``_static/mha-flashcards.js``
(and ``.json``). A book without chains gets an empty list, which the page reports as "no
flashcards yet".
"""

import json
import re
from pathlib import Path

from docutils import nodes

CLASS = "followup"
RUBRIC_CLASS = "mha-rubric"
_TAG = re.compile(r"^\s*\[(?P<tag>[EMH])\]\s*")
_BEAT = re.compile(r'^(?P<beat>.+?):\s*["\u201c](?P<anchor>[^"\u201d]+)["\u201d]$')


def reading_order(env):
    """Docnames from the root document down the toctrees, then any others, sorted."""
    order, seen = [], set()

    def visit(docname):
        if docname in seen:
            return
        seen.add(docname)
        order.append(docname)
        for child in env.toctree_includes.get(docname, []):
            visit(child)

    visit(env.config.root_doc)
    return order + sorted(set(env.found_docs) - seen)


def _fragment(builder, children):
    container = nodes.container()
    container.extend(child.deepcopy() for child in children)
    return builder.render_partial(container)["fragment"].strip()


def _question_fragment(builder, title):
    """The title's HTML without its difficulty tag (the page shows ``tag`` itself), inline."""
    title = title.deepcopy()
    first = next(iter(title.findall(nodes.Text)), None)
    if first is not None and _TAG.match(first.astext()):
        first.parent.replace(first, nodes.Text(_TAG.sub("", first.astext(), count=1)))
    inline = nodes.inline()
    inline.extend(title.children)
    return builder.render_partial(inline)["fragment"].strip()


def rubric_of(body):
    """The beats of the list that follows the "Listening for." paragraph, marked for the style sheet.

    ``body`` is a card's copied answer nodes; the list gets the class :data:`RUBRIC_CLASS`. Returns
    ``[{"beat": ..., "anchor": ...}]`` in order, ``[]`` for a chain in the older format (no list).
    """
    for node, following in zip(body, body[1:]):
        if isinstance(node, nodes.paragraph) and node.astext().startswith("Listening for.") \
                and isinstance(following, nodes.bullet_list):
            following["classes"].append(RUBRIC_CLASS)
            beats = [_BEAT.match(" ".join(item.astext().split())) for item in following.children]
            return [{"beat": m["beat"], "anchor": m["anchor"]} for m in beats if m]
    return []


def cards_in(doctree, builder, docname):
    """The follow-up admonitions of one resolved doctree, as card records."""
    cards = []
    for admonition in doctree.findall(nodes.admonition):
        if CLASS not in admonition["classes"] or not isinstance(admonition.children[0], nodes.title):
            continue
        title, body = admonition.children[0], [child.deepcopy() for child in admonition.children[1:]]
        rubric = rubric_of(body)
        text = title.astext()
        match = _TAG.match(text)
        parent = admonition.parent
        while parent is not None and not isinstance(parent, nodes.section):
            parent = parent.parent
        anchor = parent["ids"][0] if parent is not None and parent["ids"] else ""
        cards.append({
            "doc": docname,
            "url": builder.get_target_uri(docname) + (f"#{anchor}" if anchor else ""),
            "tag": match.group("tag") if match else "",
            "question_text": _TAG.sub("", text, count=1),
            "question_html": _question_fragment(builder, title),
            "answer_html": _fragment(builder, body),
            "rubric": rubric,
        })
    return cards


def keep_cards(app, doctree, docname):
    """A page's cards, read from the doctree Sphinx has just resolved to write the page: resolving every
    doctree a second time when the build has finished cost a seventh of the book's build (references and
    citations resolved again; measured 2026-12-06)."""
    if app.builder.format == "html":
        _resolved_cards(app)[docname] = cards_in(doctree, app.builder, docname)


def _resolved_cards(app):
    if not hasattr(app, "_mha_followup_cards"):
        app._mha_followup_cards = {}
    return app._mha_followup_cards


def collect_cards(app):
    """Every follow-up card of the book, in reading order, with its page's title: those of the pages this
    build wrote (:func:`keep_cards`), and for the others (an incremental build, a parallel write) those of
    their doctrees resolved now."""
    env, cards, kept = app.env, [], _resolved_cards(app)
    for docname in reading_order(env):
        page_cards = kept.get(docname)
        if page_cards is None:
            page_cards = cards_in(env.get_and_resolve_doctree(docname, app.builder), app.builder, docname)
        page = env.titles[docname].astext() if docname in env.titles else docname
        for index, card in enumerate(page_cards, start=1):
            card.update(id=f"{docname}#{index}", page=page)
            cards.append(card)
    return cards


def write_cards(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    cards = collect_cards(app)
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    text = json.dumps(cards, indent=1, ensure_ascii=False)
    (static / "mha-flashcards.json").write_text(text + "\n", encoding="utf-8")
    (static / "mha-flashcards.js").write_text(f"window.MHA_FLASHCARDS = {text};\n", encoding="utf-8")


def setup(app):
    app.connect("doctree-resolved", keep_cards)
    app.connect("build-finished", write_cards)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
