"""``python -m privbench.cli`` runs the CLI."""

from privbench.cli import console

console()
