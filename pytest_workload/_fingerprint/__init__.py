"""The fingerprint: how live modules and inputs become a workload's identity (input descriptions,
structure, fingerprint schemes) and how far two signatures are apart. Imports only the core,
the torch internals and the record."""
