"""The book around the science: it builds and renders the pages, and formats what it is
given; it never trains or fits, and the verdicts on the paper's claims live in
:mod:`bindcore.verdicts`. It may import the science and :mod:`bindcore.paper`, but
neither :mod:`bindcore.experiments` (the chapters and the report call those, and hand
the book their results) nor the code that trains, sweeps or fits
(``tests/test_layout.py``); no science module imports it: the chapters, the report and
the command line do.

* :mod:`~bindcore.book.build`: execute the notebooks with papermill (cached), then
  :mod:`~bindcore.book.render`: stage them as pages for readers and render them with
  Jupyter Book; :mod:`~bindcore.book.toc`: the table of contents;
  :mod:`~bindcore.book.pairs`: the jupytext pairs; :mod:`~bindcore.book.paths`;
  :mod:`~bindcore.book.colab`: the notebooks' Colab addresses;
* :mod:`~bindcore.book.profiles`: each chapter's parameters per profile;
* :mod:`~bindcore.book.chapter`: what a chapter does around its science (its parameters
  and page); :mod:`~bindcore.book.prose`: numbers in prose;
* :mod:`~bindcore.book.tables`: our numbers with the paper's (:mod:`bindcore.paper`)
  beside them; the figures are :mod:`bindcore.figures`.
"""
