"""``python -m privbench`` runs the CLI."""

from privbench.cli import console

console()
