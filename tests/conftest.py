"""Shared pytest setup.

OMP_WAIT_POLICY must be PASSIVE before torch loads: torch's OpenMP threads otherwise
spin-wait, which on a small shared machine slows everything down by a lot. This
module is imported by pytest before any test module, hence before torch.
"""

import os

os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
