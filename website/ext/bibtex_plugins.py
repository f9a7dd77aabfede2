"""Citations resolve without a scan of every installed package (a local extension, ``_config.yml``).

sphinxcontrib-bibtex looks up pybtex's plain-text backend for every citation it resolves
(``BibtexDomain.resolve_xref`` calls ``pybtex.plugin.find_plugin("pybtex.backends", "plaintext")``),
and pybtex looks for it among the entry points of every installed distribution each time: with the
book's ~950 citation references (resolved once for the pages and once more for the flashcards,
website/ext/followup_cards.py), that was most of the site build's CPU time (cProfile). pybtex first asks
the plugins registered at run time (``pybtex.plugin.register_plugin``, its public API), so the class
that entry point names, registered once here, answers every later lookup.
"""
import pybtex.plugin

GROUP, NAME = "pybtex.backends", "plaintext"


def setup(app):
    backend = pybtex.plugin.find_plugin(GROUP, NAME)  # the installed entry point's class
    pybtex.plugin.register_plugin(GROUP, NAME, backend, force=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
