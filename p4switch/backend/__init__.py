"""Code generation: the typed IR of a P4 program -> one Python module, exec'd once."""
