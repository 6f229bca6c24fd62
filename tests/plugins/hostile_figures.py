"""Hostile figure plugins (loaded with PRIVBENCH_PLUGIN_MODULES=hostile_figures): each
returns or does one damaging thing; the report must fail only that figure's block."""

from __future__ import annotations

import math

import privbench as pb


def _ok_trace(**extra):
    return {"label": "hostile", "x": [1.0, 2.0], "y": [0.5, 0.25], **extra}


#: figure name -> what its plot returns (a callable raising is called)
CASES = {
    "raises": lambda: (_ for _ in ()).throw(RuntimeError("deliberate figure failure")),
    "text_five": lambda: [_ok_trace(text=5)],
    "none_trace": lambda: [None, _ok_trace()],
    "nan_size": lambda: [_ok_trace(size=math.nan)],
    "inf_size": lambda: [_ok_trace(size=math.inf)],
    "million": lambda: [{"label": "many", "x": list(range(10**6)), "y": [0.0] * 10**6}],
    "not_a_list": lambda: "a string",
    "nan_values": lambda: [_ok_trace(x=[1.0, math.nan, math.inf], y=[math.nan, 1.0, -math.inf],
                                     y_low=[math.nan] * 3, y_high=[math.inf] * 3)],
}


def _figure(what: str) -> type:
    class Hostile(pb.Figure):
        name = f"hostile_{what}"
        description = f"a figure that returns {what}"
        scope = "instance"
        order = 1  # before the real figures

        def plot(self, runs, **options):
            return CASES[what]()

        def get_metadata(self, runs, **options):
            return {"title": f"hostile {what}", "xlabel": "x", "ylabel": "y",
                    "xrange": [math.nan, math.inf]}

    Hostile.__name__ = f"Hostile_{what}"
    return Hostile


#: table figure name -> what its table returns (``type = "table"``)
TABLES = {
    "ragged": lambda: {"header": ["a", "b"], "rows": [["1", "2"], ["3"]]},
    "no_header": lambda: {"rows": [["1"]]},
    "bad_titles": lambda: {"header": ["a"], "rows": [["1"]], "titles": [["x", "y"]]},
    "good": lambda: {"header": ["solver", "<b>s</b>"], "rows": [["<pwn-cell>", 1.23456789]],
                     "titles": [[None, "<pwn-title>"]], "bad": [[False, True]]},
}


def _table(what: str) -> type:
    class HostileTable(pb.Figure):
        name = f"table_{what}"
        description = f"a table figure that returns {what}"
        type = "table"
        scope = "instance"
        order = 1

        def table(self, runs, **options):
            return TABLES[what]()

        def get_metadata(self, runs, **options):
            return {"title": f"table {what}", "caption": "a table figure"}

    HostileTable.__name__ = f"HostileTable_{what}"
    return HostileTable


@pb.hookimpl
def privbench_register_figures():
    return [_figure(what) for what in CASES] + [_table(what) for what in TABLES]
