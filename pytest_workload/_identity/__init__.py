"""A workload's identity: input descriptions, structure hashes, fingerprint schemes."""
