"""``python -m privbench.cli`` runs the CLI."""

import sys

from privbench.cli import main

sys.exit(main())
