"""bindcore: the library behind the book "How can embedding models bind concepts?".

Science in packages that mirror the paper (``controlled/``, ``analysis/``, ``data/``,
``encoders/``), the experiments as the chapters run them (``experiments/``), and the book
that formats and judges their results (``book/``, ``verdicts/``, ``figures.py``); the
appendix "Running and extending this book" maps every module."""

from bindcore.runtime import apply_openmp_policy, resolve_device

# before anything loads torch (see bindcore.runtime)
apply_openmp_policy()

__version__ = "0.1.0"

__all__ = ["resolve_device"]  # the device bindcore computes on (the chapters print it)
