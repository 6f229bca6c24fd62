"""What the commands that read a store pay before they print: the code fingerprints.

``privbench results``, ``compare``, ``report`` and ``regress`` mark the rows made by other
code than the installed one (:mod:`privbench.running.fingerprint`), so a fresh process
fingerprints the plugins of every stored row. Finding a plugin's modules must not run them:
looking up names such as ``_sppm.solve.solve_sppm`` once imported the solver and numba
(``privbench results`` on the README's toy store: 2.8 s, 1.7 s without). Timed in a fresh
interpreter (asv's ``timeraw_``), imports included.
"""

from __future__ import annotations


class StoreCommandStartup:
    """Fingerprint every installed plugin, in a new process."""

    timeout = 120

    def timeraw_fingerprint_every_plugin(self) -> str:
        return """
from privbench.host.manager import get_host
from privbench.running import fingerprint

for plugin in get_host().plugins():
    fingerprint.plugin_fingerprint(plugin.kind, plugin.name)
"""
