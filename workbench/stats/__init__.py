"""Statistics for comparing runs: pure functions over numbers, no runs, no store.

`bootstrap` draws the resampling weights (seeded: the same inputs give the same interval
every time), `estimate` turns weighted samples into figures (a rate, a share, a percentile
of summed histograms), `change` turns two sides' replicates into a change with its 95%
interval and a verdict. `workbench.report.evidence` feeds them from stored runs.
"""

# Changes within +-2% are no change unless told otherwise (criterion's noise threshold).
NOISE = 0.02
