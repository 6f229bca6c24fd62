"""Figure base class: a figure turns stored runs into plain trace data, a renderer draws it.

benchopt style: ``plot(runs, **options)`` returns a list of trace dicts and
``get_metadata(runs, **options)`` a dict of title and axis labels. The HTML reporter
draws them with plotly, ``report --static`` with matplotlib, so a figure plugin never
imports a plotting library.

A trace dict has ``x`` and ``y`` (lists of numbers) and ``label`` (the legend entry), and
may have:

* ``kind``: ``line`` (default), ``bar``, ``band`` (filled between ``y_low`` and ``y_high``
  along ``x``), ``hline`` (a horizontal line at ``y[0]``), ``vline`` (vertical at ``x[0]``);
* ``y_low``/``y_high`` (error bars for a line), ``x_low``/``x_high`` (horizontal ones);
* ``text``: one hover line per point (the run key, replicates), shown with the values;
* ``mode``: ``lines+markers`` (default), ``lines`` or ``markers``; ``step``: True for a
  step curve (steps after each point);
* ``style``: the label whose colour, marker and dash to use (default ``label``); ``dash``,
  ``marker``, ``color``, ``width``, ``size``: explicit overrides;
* ``panel``: the name of the panel it belongs to (a multi-panel figure); ``group`` and
  ``showlegend`` to pair traces under one legend entry.

Metadata keys: ``title``, ``xlabel``, ``ylabel``, ``caption``, ``xlog`` and ``ylog``
(bools), ``ymin`` (a lower limit, e.g. 0), ``xrange`` ([lo, hi], linear units).

A figure of ``type = "table"`` returns a table instead of traces: ``table(runs,
**options)`` gives a dict with ``header`` (column names) and ``rows`` (lists of cells:
text or numbers), and may have ``left`` (how many leading columns are labels),
``titles`` (the rows' shape: a tooltip per cell or None) and ``bad`` (the rows' shape:
True where a cell says something failed). The reporter shows it under the metadata's
``title`` and ``caption`` and writes its rows as CSV and Markdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from privbench.protocol.outputs import outputs_of
from privbench.protocol.plugin import Parametrized

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

    from privbench.protocol.metric import Output

#: what a figure is drawn from: the runs of one instance (data set + parameters), of one
#: data set adapter, or of the whole store
SCOPES = ("instance", "dataset", "store")
#: what a figure gives: trace dicts for a renderer (``plot``) or a table (``table``)
TYPES = ("plot", "table")


def column(runs: pd.DataFrame, name: str, relation: str | None = None) -> pd.Series:
    """The values of output ``name`` (or of its declared ``relation``) in the runs, None
    where a run lacks it: :func:`privbench.protocol.outputs.outputs_of`, the one reader.

    :raises ValidationError: ``name`` is neither declared nor stored (a misspelling).
    """
    return outputs_of(runs, name, relation)


def has_values(runs: pd.DataFrame, name: str, outputs: Mapping[str, Output] | None = None) -> bool:
    """True when some run has a value for output ``name`` (``outputs``: the declarations
    to check the name against; default those of the loaded plugins)."""
    values = outputs_of(runs, name, outputs=outputs)
    return bool(values.map(lambda v: v is not None and not (isinstance(v, float) and v != v)).any())


class Figure(Parametrized):
    """A figure plugin. Required: ``name``, ``plot`` (or, for ``type = "table"``,
    ``table``). Optional: ``get_metadata``, ``options``, class attributes ``type``,
    ``reads``, ``scope``, ``order``, ``description``.

    ``reads`` names the outputs (declared by metrics or record columns) the figure
    needs: the reporter calls it only on runs where each has a value. ``options``
    returns one dict of keyword arguments per figure to draw (one per privacy notion,
    per attack, ...); the default draws one.
    """

    kind: ClassVar[str] = "figure"
    #: one of :data:`TYPES`: ``plot`` draws :meth:`plot`'s traces, ``table`` shows
    #: :meth:`table`'s rows
    type: ClassVar[str] = "plot"
    #: outputs the figure reads (see :func:`column`)
    reads: ClassVar[tuple[str, ...]] = ()
    #: one of :data:`SCOPES`; a store figure gets every run (failed ones too), the
    #: others the ok runs of their instance or data set
    scope: ClassVar[str] = "instance"
    #: figures of one scope are drawn by increasing ``order``, then name
    order: ClassVar[int] = 100

    def applies(self, runs: pd.DataFrame) -> bool:
        """True when the runs hold every output in ``reads``."""
        return not runs.empty and all(has_values(runs, name) for name in self.reads)

    def options(self, runs: pd.DataFrame, outputs: dict[str, Any]) -> list[dict[str, Any]]:
        """One dict per figure to draw from these runs; ``outputs`` maps every declared
        output name to its :class:`privbench.Output` (unit, direction)."""
        return [{}]

    def plot(self, runs: pd.DataFrame, **options: Any) -> list[dict[str, Any]]:
        """Trace dicts (see the module docstring); an empty list draws nothing."""
        raise NotImplementedError

    def table(self, runs: pd.DataFrame, **options: Any) -> dict[str, Any] | None:
        """For ``type = "table"``: ``{"header": [...], "rows": [[...], ...]}`` (optional
        ``left``, ``titles``, ``bad``; see the module docstring), or None to show nothing."""
        raise NotImplementedError

    def get_metadata(self, runs: pd.DataFrame, **options: Any) -> dict[str, Any]:
        """Title, axis labels, caption and axis types."""
        return {"title": self.description or self.name}
