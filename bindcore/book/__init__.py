"""The book around the science: build and render the pages, chapter parameters, tables and
numbers in prose. It never trains or fits, and no science module imports it
(``tests/test_layout.py``); the verdicts live in :mod:`bindcore.verdicts`.

The chapters import from here what they use. The tables (:mod:`bindcore.book.tables`) read
pandas and the science: they load when a chapter first asks for one, so that ``bindcore
book`` and ``bindcore sync``, which import this package, start without them (as
:func:`~bindcore.book.chapter.table_html` does)."""

from bindcore.parameters import chapter_parameters

from .chapter import in_book_build, ran_with, show_source, start_chapter
from .prose import glue

# the tables a chapter imports from here (:func:`__getattr__`)
_TABLES = (
    "attribution_table", "decomposition_table", "editing_table", "figure9_correlations", "figure9_level",
    "fit_search_table",
    "level_summary", "level_support", "mds_table", "parameter_table", "per_size", "pixel_results_table",
    "recipe_search_table", "sets_frame", "show_claims", "sweep_display",
)

__all__ = ["chapter_parameters", "glue", "in_book_build", "ran_with", "show_source", "start_chapter", *_TABLES]


def __getattr__(name: str):
    """A table of :data:`_TABLES`, from :mod:`bindcore.book.tables` (loaded on first use)."""
    if name in _TABLES:
        from . import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
