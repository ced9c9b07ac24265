"""Whether this process's cluster is stopping: a flag in memory the Sentinel shares with the workers it forks.

The Sentinel makes the flag before it forks anyone (`share`), and sets it when the cluster's parent tells it to
stop (`request`, forge.runtime.cluster). A worker's lease renewer then cancels the queued step it runs, and
`execute_step` hands that attempt back for the next start instead of recording a failure the stop caused. Only
the Sentinel sets it: a signal that reaches a single worker stops nothing.
"""

from __future__ import annotations

from multiprocessing.sharedctypes import RawValue

_flag = None  # a byte in shared memory; None outside a cluster (the console, tests, the local runner)


def share() -> None:
    """Make the flag, unset, in the Sentinel before it forks its workers, which then read the same byte."""
    global _flag
    _flag = RawValue("b", 0)


def request() -> None:
    """The cluster is stopping (its Sentinel's `stop`)."""
    if _flag is not None:
        _flag.value = 1


def requested() -> bool:
    return _flag is not None and bool(_flag.value)
