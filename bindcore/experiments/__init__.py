"""The paper's experiments as the chapters run them: the science of :mod:`bindcore`
composed with a chapter's concrete parameters (its ``P``), the models and sets each
chapter trains, embeds and fits, and the tables of their numbers.

* :mod:`~bindcore.experiments.inputs`: the encoders of the chapters, the authors' image
  folders and DINOv2 where a reader has them;
* :mod:`~bindcore.experiments.generalization`: §5.2: a chapter's training recipe, the
  models the other chapters reuse, the chapter's own sweep, the scale sweep's stored
  records, and the note on which code made the stored runs a chapter shows;
* :mod:`~bindcore.experiments.geometry`: §4, D.3, D.4: the embedding sets and their
  Gaussian nulls, the three-object and natural-image tables;
* :mod:`~bindcore.experiments.complexity`: §5.1, §5.3, §5.4: the approximator sweeps and
  figure 9's fits;
* :mod:`~bindcore.experiments.pixels`: appendix E: the pixel runs, their binding data and
  sweeps;
* :mod:`~bindcore.experiments.report`: everything the reproduction report shows, computed
  (or read from the store) as the chapters compute it.

Downstream of the science and of :mod:`bindcore.paper`, upstream of the book: nothing
here imports :mod:`bindcore.book`, which formats and judges what these functions return
and never trains or fits. A chapter's parameters arrive as plain dicts; only the recipe
lookup (:mod:`bindcore.controlled.recipes`) reads a profile's name.
"""
