"""bindcore: the library behind the book "How can embedding models bind concepts?"."""

from bindcore.runtime import apply_openmp_policy

# before anything loads torch (see bindcore.runtime)
apply_openmp_policy()

__version__ = "0.1.0"
