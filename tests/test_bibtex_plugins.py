"""website/ext/bibtex_plugins.py: the bibliography style it registers formats each entry once and as pybtex's own."""
import pybtex.plugin
from pybtex.database import parse_string
from pybtex.style.formatting.alpha import Style as AlphaStyle

from website.ext import bibtex_plugins

ENTRY = r"""@article{doe2020,
  author = {Doe, Jane and Roe, Richard},
  title = {On {\"U}bung and Attention},
  journal = {Journal of Tests},
  year = {2020},
  volume = {3},
  pages = {1--9}
}
"""


class _Counting(AlphaStyle):
    calls = 0

    def format_entry(self, label, entry, bib_data=None):
        _Counting.calls += 1
        return super().format_entry(label, entry, bib_data=bib_data)


def test_each_entry_is_formatted_once_and_as_pybtex_formats_it():
    entry = parse_string(ENTRY, "bibtex").entries["doe2020"]
    style = bibtex_plugins.once_style(_Counting)()
    first = style.format_entry("DR20", entry)
    second = style.format_entry("DR20", entry)  # sphinxcontrib-bibtex's tooltip call
    assert _Counting.calls == 1 and second is first
    plain = pybtex.plugin.find_plugin("pybtex.backends", "plaintext")()
    assert first.text.render(plain) == AlphaStyle().format_entry("DR20", entry).text.render(plain)
    assert "Übung" in first.text.render(plain)
    style.format_entry("RD20", entry)  # another label is formatted anew
    assert _Counting.calls == 2


def test_setup_registers_the_style_sphinxcontrib_bibtex_asks_for():
    class App:
        pass

    bibtex_plugins.setup(App())
    bibtex_plugins.setup(App())  # a second build in the same process wraps it once
    style = pybtex.plugin.find_plugin("pybtex.style.formatting", "alpha")
    assert style.formats_once and issubclass(style, AlphaStyle)
    assert style.__mro__[1] is AlphaStyle
