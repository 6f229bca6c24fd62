"""The protocol every plugin implements or receives: problems, distortions, mechanisms,
metrics, figures, LP backends, data sets, executors and reporters, certificates, the
budget test, and the errors they raise. The exact measures are in
:mod:`privbench.measures`, process plumbing in :mod:`privbench._plumbing`; the protocol
imports neither (they import it), and none of the three imports the layers above them."""
