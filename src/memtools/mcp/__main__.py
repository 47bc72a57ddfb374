"""``python -m memtools.mcp --memory DIR``: the same as the ``memtools-mcp`` console script."""

import sys

from memtools.mcp import main

sys.exit(main())
