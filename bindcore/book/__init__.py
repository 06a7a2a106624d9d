"""The book around the science: build and render the pages, chapter parameters, tables and
numbers in prose. It never trains or fits, and no science module imports it
(``tests/test_layout.py``); the verdicts live in :mod:`bindcore.verdicts`."""
