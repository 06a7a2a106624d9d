"""bindcore: the library behind the book "How can embedding models bind concepts?".

The paper's science in packages that mirror the paper, the book beside them
(``shared/DESIGN.md``; README "Project layout")::

    controlled/   §3, §5.2, B    scene space and tokens, the dual encoder, training, recipes;
                  E              the pixel scene tower and its training config
    analysis/     §3-§5, C, D    metrics, probes, approximators, complexity, geometry, embedding sets
    data/         C.1, C.3, D.3  CLEVR-2D and CLEVR-like 3-D renderers, captions, folder loaders;
                  E              the renderer of coloured squares
    encoders/     §4, §5.1       one module per frozen backend, availability, stored embeddings
    store.py                     results keyed by config, stamped with the code that made them
    sweep.py      §5.2           sweeps over training configs
    paper.py      all            every number and claim of the paper, once
    book/                        build, toc, notebook pairs, chapter parameters and helpers,
                                 tables, claims, figures
    runtime.py, io.py, ids.py    profiles, threads, device; atomic writes and hashes; object ids
    settings.py                  typed settings: values written as text read as their field's type
    cli.py                       the ``bindcore`` command

Science modules never import :mod:`bindcore.book`; the book may import everything.
Data flows one way: config -> data -> model/encoder -> embeddings -> probes/metrics ->
stored record -> notebook table or figure.
"""

from bindcore.runtime import apply_openmp_policy

# before anything loads torch (see bindcore.runtime)
apply_openmp_policy()

__version__ = "0.1.0"
