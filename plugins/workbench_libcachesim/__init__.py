"""The simulator's side of the process boundary: libCacheSim (GPL) replays a trace file and
the result is printed as JSON. Not a cache plugin and not imported by the workbench: the
workbench runs ``python -m workbench_libcachesim`` (`workbench.simulate.runner`).
"""
