from .trainer import *  # noqa: F401,F403  (temporary, split below)
from .trainer import _metrics  # noqa: F401
