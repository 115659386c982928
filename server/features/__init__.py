"""One LSP feature per module; each exposes `register(server)`."""
