"""Dataset adapter base class.

Required: ``name`` and ``load() -> PrivacyProblem``. Optional: ``info()`` (source,
licence, citation, where files were found) and ``fetch()`` (download into the cache).
``__init__`` only stores its parameters; all work happens in ``load``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from privbench.protocol.plugin import Parametrized
from privbench.protocol.problem import PrivacyProblem


class DatasetAdapter(Parametrized):
    """A data set: its parameters select and shape the data; :meth:`load` builds the problem.

    Subclasses set ``name`` and, for listings and ``privbench data info``, ``description``,
    ``source``, ``licence`` and ``citation``; raise :class:`privbench.DataError` for data
    that cannot be read, naming the file and what was expected.
    """
    kind: ClassVar[str] = "dataset"
    source: ClassVar[str] = ""
    licence: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    #: its ``test_parameters`` problem is small, self-contained and carries user records:
    #: ``privbench.testing`` checks record and selection mechanisms on it (the built-in
    #: ``linear_gaussian`` says so; the host names no data set itself)
    conformance: ClassVar[bool] = False

    def load(self) -> PrivacyProblem:
        """Build the :class:`PrivacyProblem` (prior, distortion, typed parts) this adapter describes."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """What ``privbench data info`` prints: name, description, source, licence, citation, parameters."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "licence": self.licence,
            "citation": self.citation,
            "parameters": self.get_params(),
        }

    def fetch(self) -> dict[str, Any]:
        """Download the data into the cache; adapters with embedded data have nothing to do."""
        return {"name": self.name, "fetched": False, "reason": "nothing to download"}
