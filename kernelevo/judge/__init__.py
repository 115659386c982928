"""Judging a candidate from data: the judge process (reference outputs, comparisons, baselines) and the
engine-side session that drives it and the candidate process. Nothing here runs candidate code.
"""
