"""django-q2 brokers that also keep Forge's clock.

django-q2's scheduler looks at its schedules only every 30 seconds, too
coarse for a 1 s retry backoff. The cluster's pusher calls `dequeue` in a
tight loop, so it is where due runs are woken: at most every FORGE_TICK_S,
a run whose next delayed event has fallen due is claimed (one conditional
update, so one cluster wins) and advanced; every FORGE_RECOVERY_S the
recovery task is enqueued; every FORGE_SCHEDULES_S, when a schedule has
fallen due, the task that fires schedules is (each due time's unique fire
record makes one cluster start it); every FORGE_GATEWAY_PROBE_S, the task
that probes the gateways' health URLs; and at every tick, an attempt whose
gateways all refused and whose retry time has come is queued again
(forge.runtime.gateways).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf

from forge.runs.models import Run
from forge.runtime import gateways, queue
from forge.schedules.firing import due_schedules_exist

log = logging.getLogger(__name__)
WAKE_BATCH = 100


class Clock:
    def __init__(self):
        self.last_tick = 0.0
        self.last_recovery = self.last_schedules = self.last_probe = time.monotonic()

    def tick(self, broker) -> None:
        now = time.monotonic()
        if now - self.last_tick < settings.FORGE_TICK_S:
            return
        self.last_tick = now
        try:
            wake_due_runs(broker)
            gateways.wake_due_retries(broker)
            if now - self.last_probe >= settings.FORGE_GATEWAY_PROBE_S:
                self.last_probe = now
                queue.enqueue(queue.PROBE_GATEWAYS, task_name="probe gateways", broker=broker)
            if now - self.last_recovery >= settings.FORGE_RECOVERY_S:
                self.last_recovery = now
                queue.enqueue(queue.RECOVER, task_name="recover", broker=broker)
            if now - self.last_schedules >= settings.FORGE_SCHEDULES_S:
                self.last_schedules = now
                if due_schedules_exist():
                    queue.enqueue(queue.FIRE_SCHEDULES, task_name="fire schedules", broker=broker)
        except Exception:  # noqa: BLE001 - the clock must keep going; the next tick retries
            log.exception("the clock's tick failed")
            close_old_connections()


def wake_due_runs(broker) -> int:
    now = timezone.now()
    woken = 0
    for run_id in Run.objects.filter(wake_at__lte=now).values_list("pk", flat=True)[:WAKE_BATCH]:
        if Run.objects.filter(pk=run_id, wake_at__lte=now).update(wake_at=None):
            queue.enqueue_advance(run_id, broker=broker)
            woken += 1
    return woken


class TickingORM(ORM):
    """The ORM broker, polling every FORGE_ORM_BUSY_POLL_S while tasks keep coming.

    A run's next task is queued a few milliseconds after its last one was
    taken, just after a fixed-interval poller went back to sleep: every step
    of a chain would wait a whole `poll`. So for FORGE_ORM_BUSY_S after a
    task the queue is looked at often, and an idle cluster polls slowly.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock = Clock()
        self.busy_until = 0.0

    def dequeue(self):
        self.clock.tick(self)
        tasks = self.take()
        now = time.monotonic()
        if tasks:
            self.busy_until = now + settings.FORGE_ORM_BUSY_S
            return tasks
        time.sleep(settings.FORGE_ORM_BUSY_POLL_S if now < self.busy_until else Conf.POLL)
        return None

    def take(self) -> list:
        """django-q2's claim: a task whose lock this cluster moved forward first is its own."""
        queue = self.get_connection()
        taken = []
        for task in queue.filter(key=self.list_key, lock__lt=timezone.now())[:Conf.BULK]:
            if queue.filter(id=task.id, lock=task.lock).update(lock=self.timeout(task)):
                taken.append((task.pk, task.payload))
        return taken


class TickingRedis(Redis):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock = Clock()

    def dequeue(self):
        self.clock.tick(self)
        # A short blocking pop, so the clock ticks even when no task arrives.
        task = self.connection.blpop(self.list_key, settings.FORGE_TICK_S)
        if task:
            return [(None, task[1])]
        return None
