"""Built-in result reporter plugins."""
