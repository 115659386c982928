"""The checks a verdict is made of, run inside the worker processes: outputs compared within
tolerance, the operators a call ran, the precision and operator policy, randomised weights.

The judge process and the candidate process import them; the engine's verifier (`verify/`)
drives the judge that runs them. They import neither `verify/` nor `judge/`, so no package cycle
runs through them.
"""
