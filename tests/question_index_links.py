"""Links of the built question index (tests/test_site.py checks them on the learner edition tests/site_browser.py builds).

The built question index: every link on book/question_index.html reaches a page and an anchor.

The source tests (tests/test_question_index.py) check that each question names a label or a chapter
that exists; this module checks what a reader clicks. It takes the learner edition from
tests/site_browser.py's ``site`` fixture (built once per test run, or read from MHA_BUILT_SITE after
``make learner-book``), and for every internal link of the index page checks that the file exists
and, when the link has a fragment, that the file holds an element with that ``id``. It also checks
that each question's "Answer:" is a link, so a question whose target failed to resolve (Sphinx then
prints the label as plain text) fails here as well as in the warning-free build.
"""
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

from test_question_index import QUESTIONS  # noqa: F401  (test_site reads qil.QUESTIONS)

PAGE = "book/question_index"


class _Page(HTMLParser):
    """The ids of a page's elements and the hrefs of its links inside the article body."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.hrefs, self.answer_links = set(), [], 0
        self._depth_main, self._after_answer = 0, False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "main" or (tag == "article" and "bd-article" in (attrs.get("class") or "")):
            self._depth_main += 1
        if tag == "a" and attrs.get("href") is not None and self._depth_main:
            self.hrefs.append(attrs["href"])
            if self._after_answer and "reference" in (attrs.get("class") or ""):
                self.answer_links += 1
            self._after_answer = False

    def handle_endtag(self, tag):
        if tag in ("main", "article") and self._depth_main:
            self._depth_main -= 1

    def handle_data(self, data):
        if data.strip():
            self._after_answer = data.rstrip().endswith("Answer:")


def read_page(path):
    parser = _Page()
    parser.feed(Path(path).read_text(encoding="utf-8"))
    return parser


def broken_links(page, html_root):
    """``(href, why)`` for each link of ``page`` that reaches no file or no anchor under ``html_root``."""
    page, html_root = Path(page), Path(html_root)
    broken, cache = [], {}
    for href in read_page(page).hrefs:
        url = urlparse(href)
        if url.scheme or url.netloc:  # another host: the offline site tests forbid those anyway
            continue
        target = (page.parent / unquote(url.path)).resolve() if url.path else page.resolve()
        if not target.is_file():
            broken.append((href, "no such file"))
            continue
        if url.fragment:
            if target not in cache:
                cache[target] = read_page(target).ids
            if unquote(url.fragment) not in cache[target]:
                broken.append((href, f"no id {url.fragment!r} in {target.name}"))
    return broken
