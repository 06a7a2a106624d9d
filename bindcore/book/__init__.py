"""The book around the science: it formats and judges, and never trains or fits. It may
import the science and :mod:`bindcore.paper`, but neither :mod:`bindcore.experiments`
(the chapters and the report call those, and hand the book their results) nor the code
that trains, sweeps or fits (``tests/test_layout.py``); no science module imports it:
the chapters, the report and the command line do.

* :mod:`~bindcore.book.build`: execute the notebooks with papermill (cached), then
  :mod:`~bindcore.book.render`: stage them as pages for readers and render them with
  Jupyter Book; :mod:`~bindcore.book.toc`: the table of contents;
  :mod:`~bindcore.book.pairs`: the jupytext pairs; :mod:`~bindcore.book.paths`;
* :mod:`~bindcore.book.profiles`: each chapter's parameters per profile;
* :mod:`~bindcore.book.chapter`: what a chapter does around its science (its parameters
  and page);
* :mod:`~bindcore.book.tables`, :mod:`~bindcore.verdicts.claims`,
  :mod:`~bindcore.figures`: our numbers with the paper's (:mod:`bindcore.paper`)
  beside them, the paper's claims beside ours, the book's figures in one style.
"""
