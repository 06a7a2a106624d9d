"""``python -m bindcore``: the same as the ``bindcore`` command."""

import sys

from bindcore.cli import main

sys.exit(main())
