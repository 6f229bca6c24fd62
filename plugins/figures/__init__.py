"""Built-in figure plugins: each returns trace data that the reporters draw."""
