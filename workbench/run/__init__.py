"""Running experiments: the session (the only way to run a spec), the rate search that
drives it probe by probe, and miss-ratio curves measured from a profile's own requests."""
