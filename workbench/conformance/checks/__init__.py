"""The checks. Each takes a `Target`, raises `CheckFailed` or `Skip`, or returns a short note.

- `declared`: the declaration and the options, without a live target;
- `data`: connect, misses, byte-exact round trips, delete and TTL on one client;
- `concurrent`: many clients at once, pub/sub, server statistics and closing;
- `server_gone`: what the clients do when the managed server stops.
"""
