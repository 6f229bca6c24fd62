"""Built-in dataset adapters (installed as ``privbench.datasets``)."""
