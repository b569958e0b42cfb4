"""Simulated hit rates beside the measured ones: each step's captured trace replayed through
libCacheSim's eviction policies at the server's own limit.

libCacheSim is GPL: it runs only in a subprocess (``python -m workbench_libcachesim``) that
reads the trace file and prints JSON; nothing here imports it (an import-linter contract
checks that). Simulation is a reference, never a substitute: reports say which figure was
measured and which simulated.
"""
