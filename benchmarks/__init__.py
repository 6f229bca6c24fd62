"""The privbench asv suite: solve time, peak memory and privacy/distortion tracking.

asv reads smaller numbers as better, so every ``track_*`` benchmark reports a quantity
for which a worse mechanism gives a larger number (leakage in bits, certified gap in
bits, distortion needed to reach a leakage target).
"""
