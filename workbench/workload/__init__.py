"""What clients send: the workload's distributions parsed and drawn (seeded, per client),
the trace files a replay reads, and the op trace a run writes for simulation."""
