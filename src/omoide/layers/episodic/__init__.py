"""Layer 2: the episodic store, its context keys and its in-memory vectors."""
