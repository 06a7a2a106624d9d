"""bindcore: the library behind the book "How can embedding models bind concepts?"."""

import os as _os

# PyTorch's OpenMP threads spin-wait by default, which on a small, shared machine
# slows training by an order of magnitude. This must be set before torch loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
