"""The tools the model can call: one module per tool, a registry, the path policy."""
