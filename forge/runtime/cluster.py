"""The cluster's Sentinel, stopped cleanly when a signal reaches every process of the cluster at once.

django-q2's parent process stops its cluster on SIGTERM or SIGINT by setting an event its Sentinel sleeps on;
the Sentinel then stops the pusher, lets each worker finish its task and stops the monitor. But the Sentinel,
and the pusher, monitor and workers it forks, die of SIGTERM. A signal to the cluster's whole process group
(`kill -- -PGID`, systemd) killed the Sentinel while it slept on that event, and the parent's `set()` waited
for ever for the dead sleeper to acknowledge (multiprocessing's Condition counts its sleepers and waits for
each), leaving the Sentinel a zombie nobody reaped.

So here only the parent acts on those signals: the Sentinel and its children ignore them, through a handler
rather than SIG_IGN, because an ignored signal stays ignored across exec and the commands of a shell step must
receive them as usual. And a stopping Sentinel first tells its workers (forge.runtime.stopping), which hand the
steps they run back for the next start, so a long step does not keep the cluster waiting.
"""

from __future__ import annotations

import signal

from django_q import cluster

from forge.runtime import stopping


def _left_to_the_parent(signum, frame) -> None:
    """SIGTERM and SIGINT stop the cluster through its parent, which sets the Sentinel's stop event."""


class Sentinel(cluster.Sentinel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, start=False, **kwargs)  # django-q2 sets SIGTERM's default action here
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _left_to_the_parent)  # inherited by every process it forks
        stopping.share()
        self.start()

    def stop(self) -> None:
        stopping.request()
        super().stop()
