"""Built-in executor plugins."""
