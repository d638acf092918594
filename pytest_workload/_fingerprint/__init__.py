"""How live modules and inputs become a workload's identity, and how far two keys are apart."""
