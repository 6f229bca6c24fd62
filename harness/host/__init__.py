"""The plugin host: pluggy hook specifications and the manager that discovers,
registers and reports on plugins."""
