"""website/ext/offline_site.py: what it counts as a load from another host, and what it rewrites."""

import pytest

from website.ext import offline_site


@pytest.mark.parametrize(
    ("html", "url"),
    [
        ('<script src="https://cdn.example.org/x.js"></script>', "https://cdn.example.org/x.js"),
        ("<script async src='//cdn.example.org/x.js'></script>", "//cdn.example.org/x.js"),  # protocol-relative
        ('<link rel="stylesheet" href="http://cdn.example.org/a.css">', "http://cdn.example.org/a.css"),
        ('<link href="https://cdn.example.org/a.css" rel="stylesheet" />', "https://cdn.example.org/a.css"),
        ('<img src="https://example.org/logo.png">', "https://example.org/logo.png"),
        ("<style>@import url('https://fonts.example.org/f.css');</style>", "https://fonts.example.org/f.css"),
        ('<div style="background: url(https://example.org/bg.png)"></div>', "https://example.org/bg.png"),
    ],
)
def test_external_loads_are_found(html, url):
    assert offline_site.external_loads(html) == [url]


@pytest.mark.parametrize(
    "html",
    [
        '<a href="https://mybinder.org/v2/gh/x">Launch</a>',  # a link the reader clicks
        '<link rel="canonical" href="https://example.org/page.html">',  # metadata, not a load
        '<script src="../_static/mathjax/tex-chtml.js"></script>',  # served by the site
        '<script>const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"</script>',  # a string
        '<img src="data:image/png;base64,iVBORw0KGgo=">',  # inline frames of an animation
    ],
)
def test_links_and_local_files_are_not_loads(html):
    assert offline_site.external_loads(html) == []


def test_matplotlib_font_awesome_link_is_dropped():
    body = (
        '<link rel="stylesheet"\nhref="https://maxcdn.bootstrapcdn.com/font-awesome/4.4.0/css/font-awesome.min.css">'
        '<div class="animation"></div>'
    )
    context = {"body": body}
    offline_site.drop_matplotlib_cdn(None, "book/step_through", "page.html", context, None)
    assert context["body"] == '<div class="animation"></div>'


class _Script:
    """Stands in for Sphinx's _JavaScript: a filename and attributes."""

    def __init__(self, filename, **attributes):
        self.filename = filename
        self.attributes = attributes


def test_repeated_inline_scripts_are_dropped():
    thebe = 'const THEBE_JS_URL = "x"'
    scripts = [
        _Script(None, body=thebe),  # registered by an extension
        _Script("_static/a.js"),
        _Script("", body=thebe),  # the same script added again to the page
        _Script("", body="var other = 1"),
    ]
    kept = list(scripts)
    context = {"script_files": kept}
    offline_site.drop_repeated_scripts(None, "book/index", "page.html", context, None)
    assert context["script_files"] is kept  # Sphinx renders this very list
    assert [s.attributes.get("body") for s in kept] == [thebe, None, "var other = 1"]
