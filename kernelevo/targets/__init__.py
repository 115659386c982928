"""Finding optimisation targets in users' code, turning them into tasks, applying kernels back.

Nothing in this package imports torch or triton (the language server uses it on every
edit); code that must run the user's program does so in child processes
(`capture_child`, `task_check`).
"""
