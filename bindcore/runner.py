"""One runner for long work: a sweep's training runs, §5.3's approximator sweeps, the book's
chapters side by side. A :class:`Task` is a module-level function and its arguments. It runs
in this process, in a worker process of its own (this interpreter, reading the pickled call
on its stdin: :class:`LocalExecutor`), or as a Ray task (:class:`RayExecutor`). A failed task
is reported once the others have ended; Ctrl-C or SIGTERM starts nothing more and stops the
worker processes."""

from __future__ import annotations

import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .runtime import context, context_environment, openmp_environment, progress_bar, set_threads
from .store import ResultStore

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
RAY_MAX_RETRIES = 3
# how long stopped worker processes may take to save their work before they are killed
STOP_GRACE_S = 30.0


def cpu_budget() -> int:
    """CPU cores this process may fill with workers: its context's ``cpus`` (a worker's share) where
    set, else the machine's."""
    given = context().get("cpus")
    return max(1, given) if isinstance(given, int) and not isinstance(given, bool) else (os.cpu_count() or 1)


@dataclass(frozen=True)
class Task:
    """``fn(*args)`` (``fn`` at module level, so a worker can import it), named ``label``, its
    output appended to ``log``; ``after_earlier``: it starts once every task before it has ended
    well."""

    fn: Callable[..., Any]
    args: tuple
    label: str
    log: Path
    after_earlier: bool = False


@dataclass(frozen=True)
class Failure:
    task: Task
    error: str  # one line

    def __str__(self) -> str:
        return f"{self.task.label}: {self.error} (log: {self.task.log})"


class SweepError(RuntimeError):
    """Tasks failed (``failures``); every other task finished."""

    def __init__(self, failures: Sequence[Failure], total: int) -> None:
        self.failures = list(failures)
        super().__init__(f"{len(self.failures)} of {total} sweep run(s) failed (the others finished; run the "
                         "sweep again to retry only these):\n" + "\n".join(f"  {f}" for f in self.failures))


class TaskFailed(Exception):
    """A task's worker process failed (the message: one line)."""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _error_line(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, TaskFailed) else f"{type(exc).__name__}: {_last_line(str(exc))}"


# ---------------------------------------------------------------------------------
# the worker side: one task, in whatever process runs it
# ---------------------------------------------------------------------------------
def run_here(task: Task, threads: int | None = None) -> Any:
    """``task`` in this process, bindcore's log and any traceback appended to its log; ``threads``:
    torch CPU threads."""
    set_threads(threads)
    logger = logging.getLogger("bindcore")
    level = logger.level
    handler = logging.FileHandler(task.log, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("%s on %s, process %d: %s", task.fn.__name__, socket.gethostname(), os.getpid(), task.label)
        try:
            return task.fn(*task.args)
        except Exception:
            logger.error("%s failed:\n%s", task.label, traceback.format_exc())
            raise
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()


def child_main() -> None:
    """A worker process: the pickled task on stdin (from the process that started this one), its
    pickled result to stdout; whatever it prints goes to stderr, the task's log."""
    result = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        out = run_here(pickle.load(sys.stdin.buffer))
    except Exception:  # logged by run_here
        sys.exit(1)
    pickle.dump(out, result)
    result.close()


def portable_store(store: ResultStore) -> ResultStore:
    """``store`` as a task on another machine finds it: absolute folders (its own created here)."""
    store.root.mkdir(parents=True, exist_ok=True)
    return ResultStore(store.root.resolve(), published=store.published.resolve() if store.published else None)


def worker_store(store: ResultStore, kind: Any, driver: str) -> ResultStore:
    """``store`` (:func:`portable_store`) where a task runs: its folder must be there, its published
    records are read where they are; refused when this node stores ``kind`` under another version
    than the driver (``driver``: the driver's name of the kind), whose records the driver would not find."""
    if driver != kind.name:
        raise RuntimeError(f"{socket.gethostname()} stores {kind}, the sweep {driver}: install the same bindcore "
                           "on every node")
    if not store.root.is_dir():
        raise FileNotFoundError(f"results folder {store.root} does not exist on {socket.gethostname()}: on a "
                                "cluster the results must be a folder every node shares (--results or BINDCORE_RESULTS)")
    published = store.published if store.published is not None and store.published.is_dir() else None
    return ResultStore(store.root, published=published)


# ---------------------------------------------------------------------------------
# local: in this process, or one worker process per task
# ---------------------------------------------------------------------------------
def check_workers(workers: Any) -> None:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1 (or None: one per CPU core), got {workers!r}")


@dataclass
class LocalExecutor:
    """This machine: ``workers`` tasks at once (None: one per CPU core, at most one per task), each
    in a worker process of its own with ``threads`` CPU threads (so a killed one fails alone); one
    worker: in this process."""

    workers: int | None = None
    threads: int = 1
    name: str = field(default="local", init=False)

    def __post_init__(self) -> None:
        check_workers(self.workers)

    def describe(self) -> str:
        if self.workers == 1:
            return "in this process"
        return f"local, {self.workers} worker processes" if self.workers else "local, a worker process per core"

    def limit(self, n_tasks: int) -> int:
        return self.workers or min(n_tasks, cpu_budget())

    error = staticmethod(_error_line)

    @contextmanager
    def opened(self, limit: int) -> Iterator[Callable[[Task], Future]]:
        """``submit(task)``, which starts ``task`` at once; an exception inside stops every worker
        process (Ctrl-C: SIGINT, else SIGTERM; each saves its checkpoint) and waits for it."""
        if limit <= 1:
            yield _in_this_process
            return
        workers = _WorkerProcesses(self.threads)
        with ThreadPoolExecutor(limit, thread_name_prefix="bindcore-worker") as pool:
            try:
                yield lambda task: pool.submit(workers.run, task)
            except BaseException as exc:
                workers.stop(signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
                raise


def _in_this_process(task: Task) -> Future:
    done: Future = Future()
    try:
        done.set_result(run_here(task))
    except Exception as exc:
        done.set_exception(exc)
    return done


class _WorkerProcesses:
    """The worker processes of one local run, each in a session of its own (its children with it):
    :meth:`stop` signals every running one and starts no more."""

    def __init__(self, threads: int) -> None:
        package_parent = str(Path(__file__).resolve().parents[1])  # the worker imports this bindcore
        self.env = {**os.environ, **openmp_environment(threads), **context_environment(cpus=threads),
                    "PYTHONPATH": os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)}
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen] = set()
        self.stopped = False

    def run(self, task: Task) -> Any:
        code = "from bindcore.runner import child_main; child_main()"
        with open(task.log, "a") as out, self.lock:
            if self.stopped:
                raise TaskFailed("not started: the run was stopped")
            try:
                proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=out, env=self.env, start_new_session=True)
            except OSError as exc:
                raise TaskFailed(f"could not start a worker process: {exc}") from None
            self.running.add(proc)
        try:
            result, _ = proc.communicate(pickle.dumps(task))
        finally:
            with self.lock:
                self.running.discard(proc)
        if proc.returncode == 0:
            return pickle.loads(result)  # from the process started above
        if proc.returncode < 0:
            raise TaskFailed(f"worker process killed by {signal.Signals(-proc.returncode).name}")
        raise TaskFailed(_last_line(task.log.read_text(errors="replace")) or f"exit code {proc.returncode}")

    def stop(self, signum: int) -> None:
        """Send ``signum`` to every running worker (and its children), start no more; SIGKILL those
        still running after :data:`STOP_GRACE_S`."""
        with self.lock:
            self.stopped = True
            procs = list(self.running)
        for proc in procs:
            _signal_group(proc, signum)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


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


@dataclass
class RayExecutor:
    """One Ray task per task; the store's folder must be shared by every node."""

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
        main_thread = threading.current_thread() is threading.main_thread()
        handler = signal.getsignal(signal.SIGTERM) if main_thread else None
        try:
            ray.init(address=self.address)
        except ConnectionError as exc:
            raise ValueError(f"no Ray cluster at address {self.address!r}: {_last_line(str(exc))}") from None
        finally:  # Ray's core replaces the SIGTERM handler with one that aborts the process: put the caller's back
            if callable(handler) or handler in (signal.SIG_DFL, signal.SIG_IGN):
                signal.signal(signal.SIGTERM, handler)

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

    def limit(self, n_tasks: int) -> int:
        """``workers``, else the runs the cluster holds at once now, by the resources each asks for."""
        if self.workers:
            return self.workers
        self.start()
        res = _import_ray().cluster_resources()
        fits = [res.get("CPU", 0) / self.cpus_per_run]
        if self.gpus_per_run:
            fits.append(res.get("GPU", 0) / self.gpus_per_run)
        return max(1, int(min(fits)))

    @contextmanager
    def opened(self, limit: int) -> Iterator[Callable[[Task], Future]]:
        ray = _import_ray()
        self.start()
        self.check_resources()
        remote = ray.remote(run_here)
        options = dict(num_cpus=self.cpus_per_run, num_gpus=self.gpus_per_run, max_retries=self.max_retries,
                       retry_exceptions=False)
        threads = max(1, int(self.cpus_per_run))
        yield lambda task: remote.options(name=f"bindcore {task.label}", **options).remote(task, threads).future()

    def error(self, exc: BaseException) -> str:
        ray = _import_ray()
        if isinstance(exc, ray.exceptions.RayTaskError):  # the task raised: not retried
            cause = getattr(exc, "cause", None)
            return _error_line(cause) if cause is not None else _last_line(str(exc))
        if isinstance(exc, ray.exceptions.RayError):  # its worker died more than max_retries times, ...
            died = isinstance(exc, ray.exceptions.WorkerCrashedError)
            return ((f"its worker died {self.max_retries + 1} times: " if died else "")
                    + f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}")
        return _error_line(exc)


# ---------------------------------------------------------------------------------
# choosing an executor, running tasks
# ---------------------------------------------------------------------------------
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
    if callable(getattr(spec, "opened", None)):
        return spec
    raise ValueError(f"executor must be 'local', 'ray' or an executor object, got {spec!r}")


def with_workers(executor: Any, workers: int) -> Any:
    """``executor`` with ``workers`` filled in where it has none."""
    return replace(executor, workers=workers) if getattr(executor, "workers", 0) is None else executor


def run_tasks(tasks: Sequence[Task], executor: Any, progress: bool = True, desc: str = "sweep") -> dict[str, Any]:
    """Run ``tasks`` on ``executor``, up to its limit at once and in order, behind one progress bar
    that counts those done, running and failed; their results by label. Raises :class:`SweepError`
    naming every failed task once all others are over (a task waiting on a failed one: not run)."""
    if not tasks:
        return {}
    labels = [t.label for t in tasks]
    if len(set(labels)) != len(labels):
        raise ValueError("tasks of one sweep need distinct labels (one task per config)")
    t0 = time.perf_counter()
    limit = executor.limit(len(tasks))
    bar = progress_bar(total=len(tasks), desc=f"{desc} [{executor.describe()}]", unit="run", enabled=progress)
    queue, running, results, failures = list(tasks), {}, {}, []

    def show(n_running: int) -> None:
        bar.set_postfix_str(f"running {n_running}, failed {len(failures)}", refresh=True)

    def ready(task: Task) -> bool:
        return not task.after_earlier or all(t.label in results for t in tasks[:tasks.index(task)])

    show(0)
    try:
        with executor.opened(limit) as submit:
            while queue or running:
                for task in [t for t in queue if ready(t)][:limit - len(running)]:
                    queue.remove(task)
                    show(len(running) + 1)
                    running[submit(task)] = task
                if not running:  # the rest wait for a failed task
                    break
                for done in wait(running, return_when=FIRST_COMPLETED).done:
                    task = running.pop(done)
                    try:
                        results[task.label] = done.result()
                    except Exception as exc:
                        failures.append(Failure(task, executor.error(exc)))
                        log.warning("%s: a run failed, the others go on: %s", desc, failures[-1])
                    bar.update(1)
                    show(len(running))
    finally:
        bar.close()
    failures += [Failure(t, "not run: a task before it failed") for t in queue]
    log.info("%s: %d runs in %.1f s (%s), %d failed", desc, len(tasks), time.perf_counter() - t0,
             executor.describe(), len(failures))
    if failures:
        raise SweepError(failures, len(tasks))
    return results
