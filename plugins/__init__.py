"""Built-in privbench plugins."""
