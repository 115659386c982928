"""Measurement: the timing protocol and its statistics, the torch.compile baseline, the roofline,
and the facts of the device a figure was taken on.

Importing the package imports nothing else (no torch); each module says whether it needs torch.
"""
