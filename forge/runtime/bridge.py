"""The one seam between rows and the engine: compiled workflows and interpreters (times: forge.runs.times).

An interpreter lives in a per-process cache between rounds. A copy that is
a few events behind (another worker advanced the run meanwhile) catches up
by replaying them; a process with no usable copy rebuilds it from the latest
checkpoint plus the events fed after it, which is also how a run survives
any crash.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from engine.interpreter import Interpreter
from engine.interpreter.events import event_from_json
from forge.runs.compiled import run_workflow
from forge.runs.models import Checkpoint, Run, RunEvent

INPUT = "input"  # RunEvent.kind of an event fed to the interpreter
_INTERPRETERS: OrderedDict[int, tuple[int, Interpreter]] = OrderedDict()
_LOCK = threading.Lock()
CACHED_RUNS = 256
CATCH_UP = 50  # at most this many events replayed onto a cached copy; further behind, restore


def interpreter_of(run: Run) -> Interpreter:
    """The run's interpreter, current as of `run.inputs_fed` (the caller holds the run's lock)."""
    with _LOCK:
        cached = _INTERPRETERS.get(run.pk)
    if cached is not None:
        fed, interpreter = cached
        if fed == run.inputs_fed:
            return interpreter
        if fed < run.inputs_fed <= fed + CATCH_UP:
            missed = list(RunEvent.objects.filter(run=run, kind=INPUT).order_by("-id")
                          .values_list("data", flat=True)[:run.inputs_fed - fed])
            for data in reversed(missed):
                interpreter.advance(event_from_json(data))  # effects were carried out by the other worker
            return interpreter
    return _restore(run)


def _restore(run: Run) -> Interpreter:
    checkpoint = (Checkpoint.objects.filter(run=run, inputs_fed__lte=run.inputs_fed)
                  .order_by("-inputs_fed").only("inputs_fed", "state", "event_id").first())
    if checkpoint is None:
        raise RuntimeError(f"run {run.pk} has no checkpoint to resume from")
    interpreter = Interpreter.restore(run_workflow(run), checkpoint.state)
    later = (RunEvent.objects.filter(run=run, kind=INPUT, id__gt=checkpoint.event_id)
             .order_by("id").values_list("data", flat=True))
    fed = checkpoint.inputs_fed
    for data in later:
        if fed >= run.inputs_fed:
            break
        interpreter.advance(event_from_json(data))  # effects were carried out the first time
        fed += 1
    if fed != run.inputs_fed:
        raise RuntimeError(f"run {run.pk}: the log holds {fed} events, the run says {run.inputs_fed}")
    return interpreter


def replica(run: Run) -> Interpreter:
    """A copy of the run's interpreter rebuilt from its checkpoint and log, for read paths: the cached live
    one belongs to the round that holds the run's lock."""
    tries = 3
    while True:
        run.refresh_from_db(fields=["inputs_fed"])
        try:
            return _restore(run)
        except RuntimeError:  # rounds committed meanwhile and pruned the checkpoint read: read again
            tries -= 1
            if not tries:
                raise


def remember(run: Run, interpreter: Interpreter) -> None:
    with _LOCK:
        _INTERPRETERS[run.pk] = (run.inputs_fed, interpreter)
        _INTERPRETERS.move_to_end(run.pk)
        while len(_INTERPRETERS) > CACHED_RUNS:
            _INTERPRETERS.popitem(last=False)


def forget(run_id: int) -> None:
    """Drop a copy that may be ahead of the database (its transaction rolled back)."""
    with _LOCK:
        _INTERPRETERS.pop(run_id, None)
