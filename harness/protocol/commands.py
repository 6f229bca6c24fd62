"""What a plugin's ``privbench_register_commands(cli)`` receives: the command line.

A plugin contributes sub-commands (``privbench NAME``) or benchmarks
(``privbench benchmark NAME``) without the host knowing their names. The handler set with
``parser.set_defaults(func=handler)`` receives the parsed ``argparse.Namespace`` and returns
the exit status; a :class:`privbench.ValidationError` it raises exits 2 with its message.
"""

from __future__ import annotations

import argparse
from typing import Any

from privbench.protocol.errors import PluginError


class CommandLine:
    """The ``privbench`` command line as plugins see it (argparse underneath)."""

    #: the command under which plugins' benchmarks go (``privbench benchmark NAME``)
    BENCHMARK = "benchmark"

    def __init__(self, subparsers: Any) -> None:
        self._sub = subparsers
        self._groups: dict[str, Any] = {}
        self._taken: set[str] = set(getattr(subparsers, "choices", {}) or {})

    def add_command(self, name: str, *, help: str, description: str | None = None,  # noqa: A002
                    group: str | None = None) -> argparse.ArgumentParser:
        """A new sub-command ``privbench NAME`` (or ``privbench GROUP NAME``) and its parser.

        :raises PluginError: for a name another command already has.
        """
        sub = self._sub if group is None else self._group(group)
        key = name if group is None else f"{group} {name}"
        if key in self._taken:
            raise PluginError(f"command {key!r} is already defined")
        self._taken.add(key)
        return sub.add_parser(name, help=help, description=description or help)

    def add_benchmark(self, name: str, *, help: str,  # noqa: A002
                      description: str | None = None) -> argparse.ArgumentParser:
        """A benchmark ``privbench benchmark NAME`` and its parser."""
        return self.add_command(name, help=help, description=description, group=self.BENCHMARK)

    def _group(self, group: str) -> Any:
        if group not in self._groups:
            if group in self._taken:
                raise PluginError(f"command {group!r} is already defined")
            self._taken.add(group)
            parser = self._sub.add_parser(group, help=f"{group}s contributed by plugins",
                                          description=f"{group.capitalize()}s contributed by "
                                          "plugins (privbench_register_commands).")
            self._groups[group] = parser.add_subparsers(dest=f"{group}_target", required=True,
                                                        metavar="NAME")
        return self._groups[group]
