"""The `forge` command line against a Forge server through its API (docs/design/api.md, section 6)."""
