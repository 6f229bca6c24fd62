"""``python -m privbench.cli`` runs the CLI."""

import sys

from . import main

sys.exit(main())
