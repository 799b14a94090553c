"""``python -m kbgraph.cli``: the ``kbgraph`` command."""

import sys

from kbgraph.cli import main

sys.exit(main())
