"""The built-in `shell` agent: `sh -c COMMAND` in the run's working directory.

The command was rendered with every interpolated value shell-quoted, so the
shell only interprets what the author wrote. The process runs in its own
process group so a timeout or a cancel kills everything it started, and
captured output is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping

from engine.executors.base import StepRequest, StepResult

MAX_OUTPUT_BYTES = 1_048_576
_CHUNK = 65536


class _Capture(threading.Thread):
    """Reads a pipe to its end, keeping at most `limit` bytes: the first ones, or the last with `tail`."""

    def __init__(self, pipe, limit: int, tail: bool = False):
        super().__init__(daemon=True)
        self.pipe, self.limit, self.tail = pipe, limit, tail
        self.data = bytearray()
        self.dropped = 0

    def run(self) -> None:
        try:
            while chunk := self.pipe.read(_CHUNK):
                if self.tail:
                    self.data += chunk
                    excess = len(self.data) - self.limit
                    if excess > 0:
                        del self.data[:excess]
                        self.dropped += excess
                else:
                    room = max(self.limit - len(self.data), 0)
                    self.data += chunk[:room]
                    self.dropped += len(chunk) - len(chunk[:room])
        except (OSError, ValueError):
            pass


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError):
        pass  # the command did not read all of its stdin; that is its business
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def last_line_object(stdout: str) -> dict | None:
    """The outputs a shell step declares: a JSON object on the last non-empty line of stdout."""
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


class ShellExecutor:
    """Runs commands with `sh -c`.

    Args:
        env: the environment of the commands (default: this process's).
        max_output_bytes: how much of stdout and of stderr is kept.
    """

    def __init__(self, env: Mapping[str, str] | None = None, max_output_bytes: int = MAX_OUTPUT_BYTES):
        self.env = dict(env) if env is not None else None
        self.max_output_bytes = max_output_bytes

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        env = dict(self.env if self.env is not None else os.environ)
        env.update(FORGE_RUN_ID=request.run_id, FORGE_STEP_ID=request.step, FORGE_ATTEMPT=str(request.attempt))
        try:
            process = subprocess.Popen(
                ["sh", "-c", request.command], cwd=request.workdir, env=env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return StepResult.failure(f"could not start the shell: {exc}")
        out = _Capture(process.stdout, self.max_output_bytes)
        err = _Capture(process.stderr, 65536, tail=True)
        out.start()
        err.start()
        feeder = threading.Thread(target=_feed, args=(process.stdin, (request.stdin or "").encode("utf-8")),
                                  daemon=True)
        feeder.start()
        outcome = self._wait(process, request.timeout_s, cancel)
        for thread in (feeder, out, err):
            thread.join(timeout=5)
        stdout = out.data.decode("utf-8", "replace")
        if out.dropped:
            stdout += f"\n[forge: output truncated, {out.dropped} more bytes not kept]"
        stderr_tail = err.data.decode("utf-8", "replace").strip()[-2000:]
        if outcome == "timeout":
            return StepResult.failure(f"timed out after {request.timeout_s:g} s; the process was killed",
                                      "timeout", stdout)
        if outcome == "cancelled":
            return StepResult.failure("cancelled; the process was killed", "cancelled", stdout)
        if process.returncode != 0:
            detail = f": {stderr_tail}" if stderr_tail else ""
            return StepResult.failure(f"the command exited with code {process.returncode}{detail}",
                                      "exit_code", stdout)
        return StepResult(ok=True, outputs=last_line_object(stdout) or {}, stdout=stdout)

    @staticmethod
    def _wait(process: subprocess.Popen, timeout_s: float, cancel: threading.Event) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                process.wait(timeout=max(0.0, min(0.05, left)))
                return "exited"
            except subprocess.TimeoutExpired:
                pass
            if cancel.is_set() or time.monotonic() >= deadline:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                process.wait()
                return "cancelled" if cancel.is_set() else "timeout"
