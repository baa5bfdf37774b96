"""The control plane: a local, read-only HTTP API over the state root (``the-loop serve``),
closed to everyone but the operator (decision 027)."""
