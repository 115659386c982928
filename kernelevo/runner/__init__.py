"""Everything that executes candidate code, and nothing else: the candidate process (forked fresh per
candidate by the runner host) and the compile worker. No module outside this package imports it
(tests/test_trust_boundary.py); other processes reach it only through pipes, as data.
"""
