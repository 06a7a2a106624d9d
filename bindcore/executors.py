"""Where a sweep's runs execute: this machine (:class:`LocalExecutor`) or a Ray cluster
(:class:`RayExecutor`). A task is a function name and a JSON payload; nothing is pickled."""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from .runtime import openmp_environment, progress_bar, set_threads
from .store import ResultStore

log = logging.getLogger(__name__)

# task name -> "module:function"; each takes a JSON object and returns one
TASKS: dict[str, str] = {
    "train": "bindcore.sweep:train_task",
    "train_stack": "bindcore.sweep:train_stack_task",
    "approximators": "bindcore.analysis.complexity:approximator_task",
}
EXECUTORS = ("local", "ray")
RAY_MAX_RETRIES = 3


# CPUs this process may use for runs side by side (set by the book build for parallel chapters)
CPUS_ENV = "BINDCORE_CPUS"


def cpu_budget() -> int:
    """CPU cores this process may fill with workers: ``$BINDCORE_CPUS`` where set, else the machine's."""
    given = os.environ.get(CPUS_ENV, "").strip()
    return max(1, int(given)) if given.isdigit() else (os.cpu_count() or 1)


@dataclass(frozen=True)
class Task:
    """One run of a sweep: ``name`` (a key of :data:`TASKS`), JSON ``payload``, ``label`` (kind and
    config hash) and ``log`` (the file every attempt appends its output to)."""

    name: str
    payload: dict[str, Any]
    label: str
    log: Path


@dataclass(frozen=True)
class Failure:
    task: Task
    error: str  # one line

    def __str__(self) -> str:
        return f"{self.task.label}: {self.error} (log: {self.task.log})"


class SweepError(RuntimeError):
    """Runs of a sweep failed (``failures``); every other run finished."""

    def __init__(self, failures: Sequence[Failure], total: int) -> None:
        self.failures = list(failures)
        super().__init__(f"{len(self.failures)} of {total} sweep run(s) failed (the others finished; run the "
                         "sweep again to retry only these):\n" + "\n".join(f"  {f}" for f in self.failures))


class Report(Protocol):
    """What an executor tells about its tasks (from any thread)."""

    def started(self, task: Task) -> None: ...
    def finished(self, task: Task, result: dict[str, Any]) -> None: ...
    def failed(self, task: Task, error: str) -> None: ...


class Executor(Protocol):
    name: str

    def start(self) -> None:
        """Connect or check what running needs (before any work; may raise ValueError)."""

    def describe(self) -> str: ...

    def run(self, tasks: Sequence[Task], report: Report) -> None:
        """Run every task, telling ``report`` as each starts and ends; a failure is reported, never raised."""


# ---------------------------------------------------------------------------------
# the worker side: one task, in whatever process runs it
# ---------------------------------------------------------------------------------
def task_function(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    if name not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {name!r}")
    module, _, func = TASKS[name].partition(":")
    return getattr(importlib.import_module(module), func)


def run_task(name: str, payload: str, log_path: str | None = None, threads: int | None = None) -> str:
    """Run task ``name`` on the JSON ``payload`` in this process; its result as JSON. ``log_path``: file
    that bindcore's log and any traceback are appended to; ``threads``: torch CPU threads."""
    set_threads(threads)
    handler = None
    logger = logging.getLogger("bindcore")
    level = logger.level
    if log_path is not None:
        handler = logging.FileHandler(log_path, mode="a", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        logger.info("task %s on %s, process %d", name, socket.gethostname(), os.getpid())
        try:
            return json.dumps(task_function(name)(json.loads(payload)))
        except Exception:
            logger.error("task %s failed:\n%s", name, traceback.format_exc())
            raise
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            logger.setLevel(level)
            handler.close()


def child_main(argv: Sequence[str] | None = None) -> None:
    """Entry of a local worker process: ``NAME OUT``, payload on stdin, result JSON to ``OUT``, log to
    stderr."""
    name, out = argv if argv is not None else sys.argv[1:3]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    Path(out).write_text(run_task(name, sys.stdin.read(), threads=1), encoding="utf-8")


def check_store_folder(root: str | Path) -> Path:
    """The store folder a task was given; it must exist where the task runs (on a cluster, shared)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder {root} does not exist on {socket.gethostname()}: on a cluster "
                                "the results must be a folder every node shares (--results or BINDCORE_RESULTS)")
    return root


def store_payload(store: ResultStore) -> dict[str, Any]:
    """Where a worker finds the store: its folder (absolute; created here) and the published folder."""
    store.root.mkdir(parents=True, exist_ok=True)
    return {"results": str(store.root.resolve()),
            "published": str(store.published.resolve()) if store.published is not None else None}


def worker_store(payload: dict[str, Any]) -> ResultStore:
    """The store a task was given (its folder must exist where the task runs)."""
    published = payload.get("published")
    return ResultStore(check_store_folder(payload["results"]),
                       published=published if published and os.path.isdir(published) else None)


def check_same_version(kind: Any, driver: str | None) -> None:
    """Refuse a task when the worker's ``kind`` version differs from the driver's (``driver``: its
    folder name), since the driver would not find the records."""
    if driver is not None and driver != kind.name:
        raise RuntimeError(f"{socket.gethostname()} stores {kind}, the sweep {driver}: install the same bindcore "
                           "on every node")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------------------------
# local: in this process, or one child process per run
# ---------------------------------------------------------------------------------
@dataclass
class LocalExecutor:
    """Runs on this machine: ``workers`` at once (None: one per CPU core, at most one per task), each
    in a one-thread child process so a killed run fails alone; 1: in this process."""

    workers: int | None = None
    name: str = field(default="local", init=False)

    def __post_init__(self) -> None:
        check_workers(self.workers)

    def start(self) -> None:
        pass

    def describe(self) -> str:
        if self.workers == 1:
            return "in this process"
        return f"local, {self.workers} worker processes" if self.workers else "local, a worker process per core"

    def run(self, tasks: Sequence[Task], report: Report) -> None:
        n = self.workers or min(len(tasks), cpu_budget())
        if n <= 1:
            for task in tasks:
                self._in_process(task, report)
            return
        children = _Children()
        pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="bindcore-worker")
        try:
            for future in [pool.submit(self._in_child, task, report, children) for task in tasks]:
                future.result()  # exceptions are reported by _in_child; this only waits
        except BaseException as exc:  # Ctrl-C, SIGTERM (raised in this thread by the command) or a bug
            # no queued run starts; running ones get the signal (each saves its checkpoint and ends)
            children.stop(signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()

    @staticmethod
    def _in_process(task: Task, report: Report) -> None:
        report.started(task)
        try:
            result = run_task(task.name, json.dumps(task.payload), log_path=str(task.log))
        except Exception as exc:
            report.failed(task, f"{type(exc).__name__}: {_last_line(str(exc))}")
        else:
            report.finished(task, json.loads(result))

    @staticmethod
    def _in_child(task: Task, report: Report, children: _Children) -> None:
        env = {**os.environ, **openmp_environment(threads=1)}
        code = "from bindcore.executors import child_main; child_main()"
        try:
            with tempfile.TemporaryDirectory(prefix="bindcore-task-") as tmp, open(task.log, "a") as out:
                result_path = Path(tmp) / "result.json"
                proc = children.start([sys.executable, "-c", code, task.name, str(result_path)], stdin=subprocess.PIPE,
                                      stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
                if proc is None:
                    return  # the sweep was stopped before this run began
                report.started(task)
                try:
                    proc.communicate(json.dumps(task.payload))
                finally:
                    children.done(proc)
                result = result_path.read_text(encoding="utf-8") if proc.returncode == 0 else None
        except OSError as exc:
            report.failed(task, f"could not start a worker process: {exc}")
            return
        if result is not None:
            report.finished(task, json.loads(result))
        elif proc.returncode < 0:
            report.failed(task, f"worker process killed by {signal.Signals(-proc.returncode).name}")
        else:
            report.failed(task, _last_line(task.log.read_text(errors="replace")) or f"exit code {proc.returncode}")


class _Children:
    """A local sweep's worker processes: :meth:`stop` signals every running one and starts no more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._stopped: int | None = None

    def start(self, args: list[str], **kw: Any) -> subprocess.Popen | None:
        with self._lock:
            if self._stopped is not None:
                return None
            proc = subprocess.Popen(args, **kw)
            self._running.add(proc)
            return proc

    def done(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(proc)

    def stop(self, signum: int) -> None:
        with self._lock:
            self._stopped = signum
            for proc in self._running:
                if proc.poll() is None:
                    proc.send_signal(signum)


# ---------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------
def _import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError("executor 'ray' needs Ray, which is not installed: pip install 'bindcore[cluster]'") from None
    return ray


def ray_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def _ray_task(name: str, payload: str, log_path: str, threads: int) -> str:
    """What a Ray worker runs: :func:`run_task` (module level: workers import it)."""
    return run_task(name, payload, log_path=log_path, threads=threads)


@dataclass
class RayExecutor:
    """One Ray task per run; the store's folder must be shared by every node."""

    address: str | None = None
    cpus_per_run: float = 1.0
    gpus_per_run: float = 0.0
    max_retries: int = RAY_MAX_RETRIES
    workers: int | None = None
    name: str = field(default="ray", init=False)

    def __post_init__(self) -> None:
        check_workers(self.workers)
        if not self.cpus_per_run > 0:
            raise ValueError(f"cpus per run must be > 0, got {self.cpus_per_run!r}")
        if not self.gpus_per_run >= 0:
            raise ValueError(f"gpus per run must be >= 0, got {self.gpus_per_run!r}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")

    def start(self) -> None:
        """Connect to Ray (or start a local instance) unless this process already is."""
        ray = _import_ray()
        if ray.is_initialized():
            return
        try:
            ray.init(address=self.address)
        except ConnectionError as exc:
            raise ValueError(f"no Ray cluster at address {self.address!r}: {_last_line(str(exc))}") from None

    def check_resources(self) -> None:
        """A ``ValueError`` when one run asks for more CPUs or GPUs than the cluster has (it would wait
        for ever)."""
        res = _import_ray().cluster_resources()
        for name, ask, option in (("CPU", self.cpus_per_run, "--cpus-per-run"),
                                  ("GPU", self.gpus_per_run, "--gpus-per-run")):
            if ask and ask > res.get(name, 0):
                raise ValueError(f"{ask:g} {name}s per run, and the Ray cluster has {res.get(name, 0):g} in all: no run "
                                 f"could ever start (lower {option})")

    def describe(self) -> str:
        where = self.address or os.environ.get("RAY_ADDRESS") or "local instance"
        gpus = f", {self.gpus_per_run:g} GPU" if self.gpus_per_run else ""
        return f"ray ({where}; {self.cpus_per_run:g} CPU{gpus} per run)"

    def capacity(self) -> int:
        """Runs the cluster holds at once now, by the resources each asks for."""
        ray = _import_ray()
        res = ray.cluster_resources()
        fits = [res.get("CPU", 0) / self.cpus_per_run]
        if self.gpus_per_run:
            fits.append(res.get("GPU", 0) / self.gpus_per_run)
        return max(1, int(min(fits)))

    def run(self, tasks: Sequence[Task], report: Report) -> None:
        ray = _import_ray()
        self.start()
        self.check_resources()
        remote = ray.remote(_ray_task)
        resources = dict(num_cpus=self.cpus_per_run, num_gpus=self.gpus_per_run, max_retries=self.max_retries,
                         retry_exceptions=False)
        threads = max(1, int(self.cpus_per_run))
        limit = self.workers or self.capacity()
        queue, in_flight = list(tasks), {}
        while queue or in_flight:
            while queue and len(in_flight) < limit:
                task = queue.pop(0)
                ref = remote.options(name=f"bindcore {task.label}", **resources).remote(
                    task.name, json.dumps(task.payload), str(task.log), threads)
                in_flight[ref] = task
                report.started(task)
            ready, _ = ray.wait(list(in_flight), num_returns=1)  # blocks until a run ends
            for ref in ready:
                task = in_flight.pop(ref)
                try:
                    result = json.loads(ray.get(ref))
                except ray.exceptions.RayTaskError as exc:  # the task raised: not retried
                    cause = getattr(exc, "cause", None)
                    report.failed(task, f"{type(cause).__name__}: {_last_line(str(cause))}" if cause is not None
                                  else _last_line(str(exc)))
                except ray.exceptions.RayError as exc:  # its worker died more than max_retries times, ...
                    died = isinstance(exc, ray.exceptions.WorkerCrashedError)
                    report.failed(task, (f"its worker died {self.max_retries + 1} times: " if died else "")
                                  + f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}")
                else:
                    report.finished(task, result)


# ---------------------------------------------------------------------------------
# choosing an executor, running a sweep
# ---------------------------------------------------------------------------------
def check_workers(workers: Any) -> None:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1 (or None: one per CPU core), got {workers!r}")


def make_executor(spec: Any = None, workers: int | None = None) -> Any:
    """An executor from ``spec``: None or ``"local"`` (:class:`LocalExecutor`), ``"ray"`` (local instance
    or ``RAY_ADDRESS``), ``"ray:<address>"`` (e.g. ``ray:auto``), a ``ray://`` address, or an executor
    object (returned as is)."""
    check_workers(workers)
    if spec is None or spec == "local":
        return LocalExecutor(workers)
    if isinstance(spec, str):
        if spec == "ray" or spec.startswith(("ray:", "ray://")):
            address = spec if spec.startswith("ray://") else (spec[4:] or None)
            _import_ray()
            return RayExecutor(address=address, workers=workers)
        raise ValueError(f"executor must be 'local', 'ray', 'ray:<address>' (e.g. ray:auto) or a ray:// address, "
                         f"got {spec!r}")
    if callable(getattr(spec, "run", None)):
        return spec
    raise ValueError(f"executor must be 'local', 'ray' or an executor object, got {spec!r}")


class SweepProgress:
    """A sweep's progress bar with running and failed counts; a failure is logged at once."""

    def __init__(self, total: int, desc: str, enabled: bool = True) -> None:
        self.bar = progress_bar(total=total, desc=desc, unit="run", enabled=enabled)
        self.total = total
        self.running = 0
        self.results: dict[str, dict[str, Any]] = {}
        self.failures: list[Failure] = []
        self.lock = threading.Lock()
        self._show()

    def _show(self) -> None:
        self.bar.set_postfix_str(f"running {self.running}, failed {len(self.failures)}", refresh=True)

    def started(self, task: Task) -> None:
        with self.lock:
            self.running += 1
            self._show()

    def finished(self, task: Task, result: dict[str, Any]) -> None:
        with self.lock:
            self.running -= 1
            self.results[task.label] = result
            self._show()
            self.bar.update(1)

    def failed(self, task: Task, error: str) -> None:
        failure = Failure(task, error)
        with self.lock:
            self.running -= 1
            self.failures.append(failure)
            self._show()
            self.bar.update(1)
        log.warning("sweep run failed, the others go on: %s", failure)

    def close(self) -> None:
        self.bar.close()


def run_tasks(tasks: Sequence[Task], executor: Any, progress: bool = True, desc: str = "sweep"
              ) -> dict[str, dict[str, Any]]:
    """Run ``tasks`` on ``executor`` behind one progress bar; results by task label. Raises
    :class:`SweepError` naming every failed run once all are over."""
    if not tasks:
        return {}
    labels = [t.label for t in tasks]
    if len(set(labels)) != len(labels):
        raise ValueError("tasks of one sweep need distinct labels (one task per config)")
    t0 = time.perf_counter()
    bar = SweepProgress(len(tasks), f"{desc} [{executor.describe()}]", enabled=progress)
    try:
        executor.run(list(tasks), bar)
    finally:
        bar.close()
    log.info("%s: %d runs in %.1f s (%s), %d failed", desc, len(tasks), time.perf_counter() - t0,
             executor.describe(), len(bar.failures))
    if bar.failures:
        raise SweepError(bar.failures, len(tasks))
    return bar.results


def with_workers(executor: Any, workers: int) -> Any:
    """``executor`` with ``workers`` filled in where it has none."""
    return replace(executor, workers=workers) if getattr(executor, "workers", 0) is None else executor
