"""The core every package stands on: errors, canonical and strict JSON, fields, files, hashes,
format numbers, notes, the gate result and the shared text helpers. Imports no feature, no torch
and no pytest."""
