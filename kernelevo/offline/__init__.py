"""Search without an LLM: compiler-seeded candidates, templates and parameter search.

Importing this package stays cheap; torch and triton load only in the modules (and child
processes) that need them.
"""
