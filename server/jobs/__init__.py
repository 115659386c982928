"""Search jobs: `kernelevo optimize` child processes started on explicit requests."""
