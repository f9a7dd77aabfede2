"""Sphinx extension: two repairs that the accessibility checker (axe-core) asks for.

* Matplotlib's jshtml animations (the step-through chapter) draw a frame slider,
  ``<input type="range" id="_anim_slider...">``, with no label: a screen reader announces an
  unnamed slider. It gets ``aria-label="Animation frame"``, and the frame itself,
  ``<img id="_anim_img...">``, which its script fills, gets alt text saying what it is
  (the chapter's text describes each frame).
* Docutils marks a bibliography as ``role="list"`` whose entries are
  ``role="doc-biblioentry"``, a role ARIA 1.2 deprecated; a list must hold list items, so each
  entry becomes ``role="listitem"`` (the page looks the same).

tests/site_pages.py runs axe-core on every page.
"""

import re

_SLIDER = re.compile(r'<input(?![^>]*\baria-label=)(?=[^>]*\bid="_anim_slider)')
_FRAME = re.compile(r'<img(?![^>]*\balt=)(?=[^>]*\bid="_anim_img)')
FRAME_ALT = "The current frame of the step-through animation; the buttons below move between frames"
_BIBLIOENTRY = re.compile(r'\brole="doc-biblioentry"')


def repair(body):
    """The page body with the slider labelled and the bibliography entries as list items."""
    body = _SLIDER.sub('<input aria-label="Animation frame"', body)
    body = _FRAME.sub(f'<img alt="{FRAME_ALT}"', body)
    return _BIBLIOENTRY.sub('role="listitem"', body)


def repair_page(app, pagename, templatename, context, doctree):
    if context.get("body"):
        context["body"] = repair(context["body"])


def setup(app):
    app.connect("html-page-context", repair_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
