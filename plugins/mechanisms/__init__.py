"""Built-in mechanism plugins."""
