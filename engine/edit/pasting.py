"""Placeholder replaced below."""
def copy_steps(text, ids):
    raise NotImplementedError
