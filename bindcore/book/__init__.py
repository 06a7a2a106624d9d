"""The book around the science: it may import everything, nothing imports it but the
command line.

* :mod:`~bindcore.book.build`: execute the notebooks with papermill (cached), then
  :mod:`~bindcore.book.render`: stage them as pages for readers and render them with
  Jupyter Book; :mod:`~bindcore.book.toc`: the table of contents;
  :mod:`~bindcore.book.pairs`: the jupytext pairs; :mod:`~bindcore.book.paths`;
* :mod:`~bindcore.book.profiles`: each chapter's parameters per profile;
* :mod:`~bindcore.book.chapter`: what a chapter does around its science (its parameters
  and page, notes on stored results, the encoders and trained models it uses);
* :mod:`~bindcore.book.tables`, :mod:`~bindcore.book.claims`,
  :mod:`~bindcore.book.figures`: our numbers with the paper's (:mod:`bindcore.paper`)
  beside them, the paper's claims beside ours, the book's figures in one style.
"""
