"""The data layer: what is stored or sent between processes, its canonical JSON, its
errors and its files. Imports neither torch nor pytest."""
