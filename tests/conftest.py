"""Shared pytest setup.

OMP_WAIT_POLICY must be PASSIVE before torch loads: torch's OpenMP threads otherwise
spin-wait, which on a small shared machine slows everything down by a lot. Importing
bindcore applies its OpenMP policy (bindcore.runtime); pytest imports this module
before any test module, hence before torch.
"""

import bindcore  # noqa: F401
