"""Forge: the Django console and the cluster runtime around the engine."""
