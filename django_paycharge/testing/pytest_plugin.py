"""pytest plugin registered through the ``pytest11`` entry point (fixtures of the fake gateway)."""
