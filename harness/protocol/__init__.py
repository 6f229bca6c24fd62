"""The protocol every plugin implements: problems, distortions, mechanisms, metrics,
LP backends, data sets, executors and reporters, and the errors they raise. Imports
nothing from the other layers."""
