"""Renderers of the figure protocol's trace dicts, shared by the plugins that draw: the
HTML reporter (plotly, and matplotlib for ``--static``) and a plugin's own command
(``privbench benchmark sppm --plot``). Not a plugin: no plugin imports a reporter."""
