"""Releases: a project's data frozen into versioned, checksummed files (docs/releases.md)."""
