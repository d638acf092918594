"""The core every package stands on: errors, canonical and strict JSON, files and their format
versions, notes and the gate result, and text for people. Imports no feature, no torch and no
pytest."""
