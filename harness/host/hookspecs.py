"""Hook specifications of the privbench host.

Every ``register_*`` hook but one declares things: it returns classes, and the host
creates instances; ``privbench_register_commands`` adds to the command line it is handed.
A plugin module implements any subset of them with ``@privbench.hookimpl``. See
docs/hooks.md for each hook with an example (a test checks that list matches).
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("privbench")
hookimpl = pluggy.HookimplMarker("privbench")


@hookspec
def privbench_register_mechanisms() -> list[type]:
    """Return the mechanism classes (subclasses of ``privbench.Mechanism``) this plugin provides.

    :returns: classes, not instances; each ``name`` must be unique across plugins.
    """


@hookspec
def privbench_register_lp_backends() -> list[type]:
    """Return LP backend classes (subclasses of ``privbench.LPBackend``).

    :returns: classes implementing the restricted-master protocol of ``privbench.protocol.lp``.
    """


@hookspec
def privbench_register_datasets() -> list[type]:
    """Return dataset adapter classes (subclasses of ``privbench.DatasetAdapter``).

    :returns: classes whose ``load()`` builds a ``PrivacyProblem``.
    """


@hookspec
def privbench_register_metrics() -> list[type]:
    """Return metric classes (subclasses of ``privbench.Metric``).

    :returns: classes declaring ``needs`` and implementing ``compute``.
    """


@hookspec
def privbench_register_executors() -> list[type]:
    """Return executor classes (subclasses of ``privbench.Executor``).

    :returns: classes that run a list of runs and yield records as they finish.
    """


@hookspec
def privbench_register_reporters() -> list[type]:
    """Return result reporter classes (subclasses of ``privbench.Reporter``).

    :returns: classes that turn a results store into files.
    """


@hookspec
def privbench_register_commands(cli: object) -> None:
    """Add sub-commands to the ``privbench`` command line (as datasette's ``register_commands``).

    :param cli: a :class:`privbench.protocol.commands.CommandLine`; call
        ``cli.add_command(name, help=...)`` or ``cli.add_benchmark(name, help=...)`` and set
        the handler with ``parser.set_defaults(func=handler)``.
    """


@hookspec
def privbench_register_figures() -> list[type]:
    """Return figure classes (subclasses of ``privbench.Figure``).

    :returns: classes whose ``plot(runs, **options)`` returns trace data; the reports
        draw every registered figure whose ``reads`` the runs hold.
    """
