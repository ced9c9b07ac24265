"""The built-in `shell` agent: `sh -c COMMAND` in the run's working directory, inside a sandbox (sandbox.py).

The command refers to its values through variables (FORGE_V1, ...), so the
shell only interprets what the author wrote. It runs in a clean environment
(spec section 6): PATH, HOME (the run's working directory), LANG, TZ,
FORGE_RUN_ID, FORGE_STEP_ID, FORGE_ATTEMPT, the value variables and what
the agent's configuration lists, never the worker's own variables. It runs
in a process group of its own, led by a guard (groupguard.py), so a
timeout, a cancel or the worker's death kills everything it started, and
captured output is bounded.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from engine.executors.base import SECRET_SHOWN, StepRequest, StepResult
from engine.executors.gateway_result import Malformed, clean_text, load_json, outputs_problem
from engine.executors.sandbox import SAFE_PATH, Sandbox, limits_problems
from engine.secrets import SECRET_PREFIX, read_secret, secret_name_problem
from engine.expressions.errors import ExpressionError
from engine.templates import VALUE_PREFIX, parse_template

_CHUNK = 65536
GUARD = str(Path(__file__).with_name("groupguard.py"))
_GUARD_ENV = {k: v for k, v in os.environ.items() if k == "LD_LIBRARY_PATH"}  # nothing a step could read there
RESERVED = ("PATH", "HOME")  # and every FORGE_ name: the step's own and its value variables
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
MAX_ENV_ENTRIES, MAX_ENV_VALUE = 100, 32768
MAX_STDERR_BYTES = 65536
WATCH_EVERY_S = 0.5  # how often a watcher hears the output so far while the command runs


def _reserved(name: str) -> bool:
    return name in RESERVED or name.startswith("FORGE_")


@functools.cache
def shield_worker() -> bool:
    """Make this process non-dumpable (Linux): its /proc files (environ, memory) then belong to root, so a
    step running as the same user cannot read the worker's secrets through /proc/$PPID. Best effort."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        return False


def agent_env_problems(config: Mapping) -> list[str]:
    """Why a shell agent's `env` (NAME: literal value), `secret_env` (worker variables to pass on), `network` and
    `limits` (sandbox.py) are refused."""
    if not isinstance(config, Mapping):
        return ["the configuration must be a JSON object"]
    problems = limits_problems(config)
    env, secrets = config.get("env", {}), config.get("secret_env", [])
    if not isinstance(env, Mapping) or len(env) > MAX_ENV_ENTRIES:
        problems.append(f"env must be a mapping of at most {MAX_ENV_ENTRIES} NAME: value pairs")
        env = {}
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            problems.append(f"env: {str(name)[:100]!r} is not a variable name (letters, digits and _)")
        elif _reserved(name):
            problems.append(f"env: {name} is set by Forge for every shell step (PATH, HOME and FORGE_* are reserved)")
        elif not isinstance(value, str) or "\0" in value or len(value) > MAX_ENV_VALUE:
            problems.append(f"env: the value of {name} must be text of at most {MAX_ENV_VALUE} characters")
    if not isinstance(secrets, list) or len(secrets) > MAX_ENV_ENTRIES:
        problems.append(f"secret_env must be a list of at most {MAX_ENV_ENTRIES} variable names")
        secrets = []
    problems.extend(f"secret_env: {problem}" for name in secrets if (problem := secret_name_problem(name)))
    return problems


def agent_environment(config: Mapping, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a shell agent's configuration adds to its steps' environment: `env` as written, and each
    `secret_env` variable the worker has (one it lacks is left out, as an unset variable).

    Raises:
        ValueError: the configuration is refused (agent_env_problems), every reason in the message.
    """
    problems = agent_env_problems(config)
    if problems:
        raise ValueError("; ".join(problems))
    added = dict(config.get("env", {}))
    for name in config.get("secret_env", []):
        value = read_secret(name, environ)
        if value is not None:
            added[name] = value
    return added


class _Capture(threading.Thread):
    """Reads a pipe to its end, keeping at most `limit` bytes: the first ones, or the last with `tail`."""

    def __init__(self, pipe, limit: int, tail: bool = False):
        super().__init__(daemon=True)
        self.pipe, self.limit, self.tail = pipe, limit, tail
        self.data = bytearray()
        self.dropped = 0
        self.lock = threading.Lock()

    def snapshot(self) -> tuple[bytes, int]:
        """What was read so far (as kept) and how many bytes were dropped: safe while it still reads."""
        with self.lock:
            return bytes(self.data), self.dropped

    def run(self) -> None:
        try:
            while chunk := self.pipe.read1(_CHUNK):  # what is there now, so a watcher sees output as it comes
                with self.lock:
                    self._keep(chunk)
        except (OSError, ValueError):
            pass

    def _keep(self, chunk: bytes) -> None:
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


def last_line_object(stdout: str) -> dict | str | None:
    """The outputs a shell step declares: a JSON object on the last non-empty line of stdout.

    Returns:
        The object; None when the last line is not a JSON object; a message when it is one that
        cannot be kept (too deep, a NUL, a number out of range): the command's output is hostile input.
    """
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                value = load_json(line)
            except Malformed as exc:
                if "is not JSON" in str(exc):
                    return None
                return f"stdout's last line cannot be the step's outputs ({exc.problems[0][1]})"
            if not isinstance(value, dict):
                return None
            problem = outputs_problem(value)
            return f"stdout's last line cannot be the step's outputs (they {problem})" if problem else value
    return None


def _has_placeholders(command: str | None) -> bool:
    try:
        return command is not None and bool(parse_template(command).paths)
    except ExpressionError:
        return True  # never validated as a template: nothing says how it was written out


class ShellExecutor:
    """Runs commands with `sh -c`, in a clean environment and a sandbox.

    Args:
        env: what the agent's configuration adds to the environment (agent_environment()).
        sandbox: where the command runs, with the agent's network and limits (Sandbox.for_agent()); its
            `output_kb` is how much of stdout is kept (the first bytes; of stderr, the last MAX_STDERR_BYTES).
        watch: hears (stdout, stderr) so far every WATCH_EVERY_S while the command runs, and once at its end.

    The values of the agent's secrets never leave in what the command printed: each becomes SECRET_SHOWN.
    """

    def __init__(self, env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None,
                 watch: Callable[[str, str], None] | None = None):
        self.env = {k: v for k, v in (env or {}).items() if k.startswith(SECRET_PREFIX) or not _reserved(k)}
        self.sandbox = Sandbox() if sandbox is None else sandbox
        self.max_output_bytes = self.sandbox.output_bytes
        self.watch = watch
        # Longest first, so a secret that contains another is replaced whole.
        self.secrets = sorted({v for k, v in self.env.items() if k.startswith(SECRET_PREFIX) and v}, key=len,
                              reverse=True)

    def shown(self, data: bytes, dropped: int = 0, *, tail: bool = False) -> str:
        """Printed bytes as text a person may read: decoded, cleaned, secrets replaced, truncation said."""
        text = clean_text(data.decode("utf-8", "replace"))
        for secret in self.secrets:
            text = text.replace(secret, SECRET_SHOWN)
        if dropped:
            said = f"[forge: {dropped} earlier bytes not kept]" if tail else \
                f"[forge: output truncated, {dropped} more bytes not kept]"
            text = f"{said}\n{text}" if tail else f"{text}\n{said}"
        return text

    def environment(self, request: StepRequest) -> dict[str, str]:
        """Nothing of the worker's environment but its PATH (outside a sandbox): its secrets stay in the worker."""
        path = SAFE_PATH if self.sandbox.enabled else os.environ.get("PATH") or SAFE_PATH
        env = {"PATH": path, "HOME": request.workdir,
               "LANG": "C.UTF-8", "TZ": "UTC", **self.env}
        env.update((k, v) for k, v in request.env.items() if k.startswith(VALUE_PREFIX))
        env.update(FORGE_RUN_ID=request.run_id, FORGE_STEP_ID=request.step, FORGE_ATTEMPT=str(request.attempt))
        return env

    def execute(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        if not request.env and _has_placeholders(request.spec.command):
            # Rendered as text for another kind of agent (this one became a shell agent mid-run): its
            # values are now shell syntax, so it must not run.
            return StepResult.failure(f"the command of step {request.step!r} was written out for an agent that is "
                                      f"not a shell; agent {request.agent!r} runs a shell now: start a new run",
                                      "template_error")
        shield_worker()
        if request.workdir is None:  # a call outside any run: a directory of its own, never the worker's
            with tempfile.TemporaryDirectory(prefix="forge-step-") as workdir:
                return self._sandboxed(replace(request, workdir=workdir), cancel)
        return self._sandboxed(request, cancel)

    def _sandboxed(self, request: StepRequest, cancel: threading.Event) -> StepResult:
        workdir = request.workdir
        try:
            self.sandbox.prepare(workdir)
        except OSError as exc:
            return StepResult.failure(f"could not prepare the run's directory for the sandbox: {exc}",
                                      "sandbox_unavailable")
        if problem := self.sandbox.problem(workdir):
            # Read on the run page: who can act, not the setting (docs/sandbox.md names it for that person).
            return StepResult.failure(f"{problem}; shell steps cannot run on this server until its operator "
                                      f"fixes the sandbox (or turns it off, which is unsafe)", "sandbox_unavailable")
        watched, alive = os.pipe()  # the guard reads `watched`; only this process holds `alive`
        guard = None
        try:
            try:
                guard = subprocess.Popen([sys.executable, "-I", "-S", GUARD, str(watched)], pass_fds=(watched,),
                                         env=_GUARD_ENV, stdin=subprocess.DEVNULL, process_group=0)
                process = subprocess.Popen(
                    self.sandbox.argv(["sh", "-c", request.command], workdir), cwd=workdir,
                    env=self.environment(request),
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=guard.pid)
            except (OSError, ValueError) as exc:
                return StepResult.failure(f"could not start the shell: {exc}")
            finally:
                os.close(watched)
            return self._run(process, guard.pid, request, cancel)
        finally:
            try:
                os.write(alive, b"done")  # the step ended here: the guard leaves without killing anything
            except OSError:
                pass  # it was killed with the group (timeout, cancel)
            os.close(alive)
            if guard is not None:
                guard.wait()

    def _run(self, process: subprocess.Popen, group: int, request: StepRequest, cancel: threading.Event) -> StepResult:
        out = _Capture(process.stdout, self.max_output_bytes)
        err = _Capture(process.stderr, MAX_STDERR_BYTES, tail=True)
        out.start()
        err.start()
        feeder = threading.Thread(target=_feed, args=(process.stdin, (request.stdin or "").encode("utf-8")),
                                  daemon=True)
        feeder.start()
        outcome = self._wait(process, group, request.timeout_s, cancel, lambda: self._tell(out, err))
        for thread in (feeder, out, err):
            thread.join(timeout=5)
        stdout = self.shown(*out.snapshot())
        stderr_tail = self.shown(err.snapshot()[0]).strip()[-2000:]
        self._tell(out, err)
        if outcome == "timeout":
            return StepResult.failure(f"timed out after {request.timeout_s:g} s; the process was killed",
                                      "timeout", stdout)
        if outcome == "cancelled":
            return StepResult.failure("cancelled; the process was killed", "cancelled", stdout)
        if process.returncode != 0:
            detail = f": {stderr_tail}" if stderr_tail else ""
            return StepResult.failure(f"the command exited with code {process.returncode}{detail}",
                                      "exit_code", stdout)
        outputs = last_line_object(stdout)
        if isinstance(outputs, str):
            return StepResult.failure(outputs, "output_invalid", stdout)
        return StepResult(ok=True, outputs=outputs or {}, stdout=stdout)

    def _tell(self, out: _Capture, err: _Capture) -> None:
        if self.watch is None:
            return
        sizes = (len(out.data) + out.dropped, len(err.data) + err.dropped)
        if sizes == getattr(out, "told", None):
            return  # nothing new since the last time
        out.told = sizes
        try:
            self.watch(self.shown(*out.snapshot()), self.shown(*err.snapshot(), tail=True))
        except Exception:  # noqa: BLE001 - a watcher's trouble never stops the command
            pass

    @staticmethod
    def _wait(process: subprocess.Popen, group: int, timeout_s: float, cancel: threading.Event,
              tick: Callable[[], None]) -> str:
        deadline = time.monotonic() + timeout_s
        told = time.monotonic()
        while True:
            if time.monotonic() - told >= WATCH_EVERY_S:
                tick()
                told = time.monotonic()
            left = deadline - time.monotonic()
            try:
                process.wait(timeout=max(0.0, min(0.05, left)))
                return "exited"
            except subprocess.TimeoutExpired:
                pass
            if cancel.is_set() or time.monotonic() >= deadline:
                try:
                    os.killpg(group, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                process.wait()
                return "cancelled" if cancel.is_set() else "timeout"
