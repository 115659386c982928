"""KernelEvo's language server (pygls 2, stdio): lenses, hovers, code actions and search jobs.

Nothing here imports torch or triton, and nothing here runs user or candidate code:
targets are found by a separate analysis process (AST only) and searches run in the
`kernelevo optimize` child process, started only on an explicit request.
"""
