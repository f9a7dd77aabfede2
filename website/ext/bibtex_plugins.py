"""Citations resolve without a scan of every installed package, and each entry is formatted once (a local
extension, ``_config.yml``).

sphinxcontrib-bibtex looks up pybtex's plain-text backend for every citation it resolves
(``BibtexDomain.resolve_xref`` calls ``pybtex.plugin.find_plugin("pybtex.backends", "plaintext")``),
and pybtex looks for it among the entry points of every installed distribution each time: with the
book's ~950 citation references (resolved once for the pages and once more for the flashcards,
website/ext/followup_cards.py), that was most of the site build's CPU time (cProfile). pybtex first asks
the plugins registered at run time (``pybtex.plugin.register_plugin``, its public API), so the class
that entry point names, registered once here, answers every later lookup.

The formatting style is registered the same way, as :class:`OnceStyle`. sphinxcontrib-bibtex formats every
entry of the bibliography twice, once for the list and once more for its hover tooltip
(``BibtexDomain.get_formatted_entries``: ``bibtex_tooltips`` is on and ``bibtex_tooltips_style`` empty,
so both calls use the same style object with the same label); with ~1,600 entries that was a sixth of the
site build's CPU time, most of it decoding LaTeX in each field (cProfile, 2026-12-06). ``OnceStyle``
answers the second call from the first.
"""
import pybtex.plugin

GROUP, NAME = "pybtex.backends", "plaintext"
STYLES, STYLE = "pybtex.style.formatting", "alpha"  # sphinxcontrib-bibtex's default; _config.yml sets no other


def once_style(base):
    """A subclass of the pybtex style ``base`` whose objects format each ``(label, entry)`` once."""

    class OnceStyle(base):
        def format_entry(self, label, entry, bib_data=None):
            formatted = getattr(self, "_formatted", None)
            if formatted is None:
                formatted = self._formatted = {}
            key = (label, id(entry), id(bib_data))
            if key not in formatted:  # the entry is kept beside its result, so its id is not reused
                formatted[key] = (entry, super().format_entry(label, entry, bib_data=bib_data))
            return formatted[key][1]

    OnceStyle.__name__ = OnceStyle.__qualname__ = f"Once{base.__name__}"
    return OnceStyle


def setup(app):
    backend = pybtex.plugin.find_plugin(GROUP, NAME)  # the installed entry point's class
    pybtex.plugin.register_plugin(GROUP, NAME, backend, force=True)
    style = pybtex.plugin.find_plugin(STYLES, STYLE)
    if not getattr(style, "formats_once", False):
        style = once_style(style)
        style.formats_once = True
        pybtex.plugin.register_plugin(STYLES, STYLE, style, force=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
