"""Build the book: execute the ``_toc.yml`` notebooks with papermill into
``<build_dir>/executed/<profile>/``, skipping those whose cache key is unchanged (:func:`cache_key`),
then render them with Jupyter Book into ``<build_dir>/html``."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindcore.io import atomic_write_bytes, digest, flock, is_temporary
from bindcore.parameters import check_names, profile_file, read_profile
from bindcore.runtime import check_profile, context, context_environment, in_environment, openmp_environment
from bindcore.store import RESULTS_ENV, shown_path, tally_counts

from .chapter import METADATA_KEY
from .pairs import sync_pairs
from .paths import PACKAGE_DIR, repo_root
from .paths import resolve_root as _resolve_root
from .render import BookBuildError, build_html, read_py_notebook, reader_page
from .toc import EVERY_CHAPTER, READS, chapters_read, toc_files, toc_notebooks, waits_for_earlier

__all__ = [
    "BookBuildError", "NotebookExecutionError", "NotebookRun", "build_book", "build_html", "cache_key", "execute_book",
    "execute_notebook", "inputs_hash", "library_hash", "published_hash", "reader_page", "repo_root", "sync_pairs", "toc_files", "toc_notebooks",
]

logger = logging.getLogger(__name__)

KERNEL_NAME = "python3"


class NotebookExecutionError(RuntimeError):
    """A notebook failed while papermill executed it."""


# the build's measurement of itself, written beside the HTML (build_times)
BUILD_TIMES = "build-times.json"


@dataclass(frozen=True)
class NotebookRun:
    """What happened to one notebook during a build."""

    name: str
    path: Path
    cached: bool
    seconds: float


# --------------------------------------------------------------------------- cache key


def _files_hash(base: Path, files: Sequence[Path]) -> str:
    """Hash of the path (relative to ``base``) and content of each of ``files``."""
    return digest(*(part for p in files for part in (p.relative_to(base).as_posix(), p.read_bytes())), length=None)


def library_hash(package_dir: Path | str | None = None) -> str:
    """Hash of the relative path and content of every ``*.py`` file of the package."""
    package_dir = Path(package_dir) if package_dir is not None else PACKAGE_DIR
    return _files_hash(package_dir, [p for p in sorted(package_dir.rglob("*.py")) if "__pycache__" not in p.parts])


def published_hash(published_dir: Path | str) -> str:
    """Hash of the relative path and content of every file under ``published_dir`` (may be absent), but
    the temporary files of writes a kill cut short (:func:`bindcore.io.is_temporary`)."""
    published_dir = Path(published_dir)
    return _files_hash(published_dir, sorted(p for p in published_dir.rglob("*") if p.is_file()
                                             and not is_temporary(p.name)) if published_dir.is_dir() else [])


def inputs_hash(root: Path) -> str:
    """Hash of what a chapter reads besides its source and parameters: the library code, the published
    records and which result store it reads (``$BINDCORE_RESULTS``)."""
    from bindcore.store import default_root

    return digest(library_hash(root / "bindcore"), published_hash(root / "published"),
                  str(default_root().resolve()), length=None)


def cache_key(source: str, parameters: Mapping[str, Any], inputs: str, chapters: Any = None) -> str:
    """Key of one execution: source, parameters, ``inputs`` (:func:`inputs_hash`) and, for a page that
    reads other chapters' parameters, those (``chapters``)."""
    return digest(source, json.dumps(parameters, sort_keys=True), inputs, chapters, length=None)


def _stored_key(executed: Path) -> str | None:
    try:
        with executed.open(encoding="utf-8") as f:
            return json.load(f)["metadata"][METADATA_KEY]["cache_key"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --------------------------------------------------------------------------- execution


def _kernel_environment(root: Path, work: Path, executed_dir: Path, stored_only: bool = False
                        ) -> AbstractContextManager[None]:
    """Environment inherited by the kernel papermill starts (restored afterwards): the context of a
    chapter in a book build (:data:`bindcore.runtime.CONTEXT_ENV`): where it records the parameters it
    ran with (``work/parameters.json``) and lists the records it reads and writes (``work/records.jsonl``),
    the other chapters' executions (``executed_dir``; it also tells a chapter to leave out live-only
    parts, the ipywidgets explorers); ``stored_only``: its result store starts no new entry."""
    cpus = context().get("cpus")  # a chapter executed beside others gets its share of the cores
    # no HF_HUB_OFFLINE: the encoders probe the Hub and fall back offline themselves;
    # progress bars would land in the pages as text; papermill reports progress per cell
    env = {**openmp_environment(cpus), "TQDM_DISABLE": "1"}
    env.update(context_environment(record=str(work / "parameters.json"), tally=str(work / "records.jsonl"),
                                   executed=str(executed_dir), stored_only=stored_only or None))
    # the kernel runs in notebooks/; it must import this checkout's bindcore
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    return in_environment(**env)


# longest a cell may run before the build fails (a hung kernel would stall CI); none on `paper`
CELL_TIMEOUT_S = {"smoke": 900, "quick": 3 * 3600, "colab": None, "paper": None}


def _run_papermill(input_path: Path, output_path: Path, parameters: dict[str, Any], cwd: Path) -> None:
    """Execute ``input_path`` into ``output_path`` (the one place papermill is called)."""
    import papermill

    papermill.execute_notebook(
        str(input_path),
        str(output_path),
        parameters=parameters,
        kernel_name=KERNEL_NAME,
        cwd=str(cwd),
        progress_bar=True,
        request_save_on_cell_execute=True,
        execution_timeout=CELL_TIMEOUT_S.get(parameters.get("profile", "paper")),
    )


def _failure_message(name: str, source_nb, exc: BaseException, partial: Path) -> str:
    """Name the notebook and the failing cell (index in the .py source, first lines)."""
    cell_source = getattr(exc, "source", None)
    exec_count = getattr(exc, "exec_count", None)
    if cell_source is None and partial.is_file():
        # Kernel death or timeout: papermill marks the cell it was running.
        try:
            import nbformat

            executed = nbformat.read(partial, as_version=4)
            for cell in executed.cells:
                if cell.get("metadata", {}).get("papermill", {}).get("status") in ("running", "failed"):
                    cell_source, exec_count = cell.source, cell.get("execution_count")
                    break
        except Exception:  # noqa: BLE001 - best effort, the original error is what matters
            pass
    where = "an unknown cell"
    if cell_source is not None:
        index = next((i for i, c in enumerate(source_nb.cells) if c.source == cell_source), None)
        if index is not None:
            where = f"cell {index + 1} of {len(source_nb.cells)}"
        elif "injected-parameters" in cell_source or cell_source.startswith("# Parameters"):
            where = "the injected parameters cell"
        else:
            where = "a cell"
        if exec_count is not None:
            where += f" (In [{exec_count}])"
        excerpt = "\n".join("    " + line for line in cell_source.splitlines()[:6])
        where += f":\n{excerpt}"
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    detail = str(exc) if hasattr(exc, "traceback") else ""
    return f"notebook {name} (notebooks/{name}.py) failed in {where}\n{ename}: {evalue}{detail}"


def _run_records(out_dir: Path, but: str, only: set[str] | None = None) -> dict[str, Any]:
    """{notebook: parameters it ran with} of the executed notebooks in ``out_dir`` but ``but`` (``only``:
    these alone)."""
    records = {}
    for path in sorted(out_dir.glob("*.ipynb")):
        if path.stem == but or (only is not None and path.stem not in only):
            continue
        try:
            records[path.stem] = json.loads(path.read_text(encoding="utf-8"))["metadata"][METADATA_KEY].get(
                "run_parameters")
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return records


def papermill_parameters(notebook: str, profile: str, root: Path, given: Mapping[str, Any] | None = None
                         ) -> dict[str, Any]:
    """What the book build hands papermill for ``notebook`` on ``profile``: its profile file as
    papermill reads it (``profile`` alone on ``quick``, and where the file is missing, with a note),
    then ``given`` (e.g. a dry run's cuts), every name checked to be one of its parameters cell and
    every value of its type, before any kernel starts."""
    if profile == "quick" or not profile_file(notebook, profile, root).is_file():
        if profile != "quick":
            print(f"[book] note: {notebook} has no notebooks/profiles/{profile}/{notebook}.yaml; it runs with its "
                  f"parameters cell and profile={profile}", flush=True)
        params = {"profile": profile}
    else:
        params = read_profile(notebook, profile, root)
    check_names(notebook, given or {}, root, f"notebooks/{notebook}.py: ")
    return {**params, **(given or {})}


def _key(name: str, source: str, params: Mapping[str, Any], out_dir: Path, root: Path, inputs: str | None) -> str:
    """The cache key of a chapter's execution as it would run now (:func:`cache_key`)."""
    chapters = _run_records(out_dir, but=name, only=chapters_read(name)) if name in READS else None
    return cache_key(source, params, inputs if inputs is not None else inputs_hash(root), chapters)


def outdated_pages(names: Iterable[str], profile: str, out_dir: Path, root: Path, inputs: str) -> list[str]:
    """The chapters among ``names`` whose executed copy has a stale cache key."""
    out = []
    for name in names:
        executed = out_dir / f"{name}.ipynb"
        if executed.is_file():
            source = (root / "notebooks" / f"{name}.py").read_text(encoding="utf-8")
            params = papermill_parameters(name, profile, root)
            if _stored_key(executed) != _key(name, source, params, out_dir, root, inputs):
                out.append(name)
    return out


def _execute(
    name: str,
    profile: str,
    out_dir: Path,
    parameters: Mapping[str, Any] | None,
    force: bool,
    root: Path,
    inputs: str | None = None,
    owner: int | None = None,
) -> NotebookRun:
    """Execute one chapter (see :func:`execute_notebook`); its work folder is
    ``<out_dir>/.<name>.<owner>.*`` (``owner``: the build's process id, this one's by default)."""
    import nbformat

    py_path = root / "notebooks" / f"{name}.py"
    if not py_path.is_file():
        raise FileNotFoundError(f"notebook source {py_path} does not exist")
    source = py_path.read_text(encoding="utf-8")
    params = papermill_parameters(name, profile, root, parameters)
    out_dir.mkdir(parents=True, exist_ok=True)
    key = _key(name, source, params, out_dir, root, inputs)

    executed = out_dir / f"{name}.ipynb"
    if not force and executed.is_file() and _stored_key(executed) == key:
        return NotebookRun(name, executed, cached=True, seconds=0.0)

    source_nb = read_py_notebook(py_path)
    work = Path(tempfile.mkdtemp(dir=out_dir, prefix=f".{name}.{owner or os.getpid()}."))  # this execution's
    input_path, partial, recorded = work / "input.ipynb", work / "partial.ipynb", work / "parameters.json"
    print(f"[book] executing {name} (profile={profile}, parameters={json.dumps(params)})", flush=True)
    start = time.perf_counter()
    try:
        nbformat.write(source_nb, input_path)
        with _kernel_environment(root, work, out_dir, stored_only=READS.get(name) == EVERY_CHAPTER):
            try:
                _run_papermill(input_path, partial, params, root / "notebooks")
            except Exception as exc:
                raise NotebookExecutionError(_failure_message(name, source_nb, exc, partial)) from exc
        seconds = time.perf_counter() - start
        nb = nbformat.read(partial, as_version=4)
        nb.metadata[METADATA_KEY] = {
            "cache_key": key,
            "profile": profile,
            "parameters": params,
            # the parameters the chapter ran with (its variables as the parameters cell and papermill set them)
            "run_parameters": json.loads(recorded.read_text()) if recorded.is_file() else None,
            "source": f"notebooks/{name}.py",
            "seconds": round(seconds, 3),
            "records": tally_counts(work / "records.jsonl"),  # reused (published, local) and computed
        }
        papermill_meta = nb.metadata.get("papermill")
        if papermill_meta is not None:  # record the real source, not the temporary input
            papermill_meta["input_path"] = f"notebooks/{name}.py"
            papermill_meta["output_path"] = executed.name
        atomic_write_bytes(executed, nbformat.writes(nb).encode("utf-8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return NotebookRun(name, executed, cached=False, seconds=seconds)


def execute_notebook(
    name: str,
    profile: str,
    out_dir: Path | str,
    parameters: Mapping[str, Any] | None = None,
    force: bool = False,
    *,
    root: Path | str | None = None,
) -> Path:
    """Execute ``notebooks/<name>.py`` with papermill into ``<out_dir>/<name>.ipynb``, skipped when its
    cache key is unchanged. The file is replaced atomically, only after success; a failure raises
    :class:`NotebookExecutionError` naming the cell."""
    run = _execute(name, profile, Path(out_dir), parameters, force, _resolve_root(root))
    return run.path


# --------------------------------------------------------------------------- whole book


def execute_book(
    profile: str = "quick",
    build_dir: Path | str = "_build",
    force: bool = False,
    only: Iterable[str] | None = None,
    *,
    root: Path | str | None = None,
    parameters: Mapping[str, Mapping[str, Any]] | None = None,
    recompute: bool = False,
    jobs: int = 1,
) -> list[NotebookRun]:
    """Execute the ``_toc.yml`` notebooks (or ``only``) and print timings.

    ``parameters``: {notebook: papermill parameters over the profile's}. ``recompute``: execute all
    again from scratch (:func:`recomputing`). ``jobs`` > 1: that many chapters side by side.
    """
    check_profile(profile)
    root = _resolve_root(root)
    names = toc_notebooks(root)
    selected = list(names)
    if only:
        only = list(only)
        unknown = [n for n in only if n not in names]
        if unknown:
            raise ValueError(f"--only {', '.join(unknown)}: not in _toc.yml; choose from {', '.join(names)}")
        selected = [n for n in names if n in only]
    build_dir = _absolute(build_dir)
    out_dir = build_dir / "executed" / profile
    inputs = inputs_hash(root)
    runs = []
    if jobs < 1:
        raise ValueError(f"jobs = {jobs}: must be at least 1")
    with recomputing(build_dir) if recompute else nullcontext():
        if jobs > 1:
            return _execute_side_by_side(selected, profile, out_dir, parameters or {}, force or recompute, root,
                                         inputs, jobs)
        for name in selected:
            run = _execute(name, profile, out_dir, (parameters or {}).get(name), force or recompute, root, inputs)
            _report(run)
            runs.append(run)
    if only:
        for name in outdated_pages([n for n in names if n not in selected], profile, out_dir, root, inputs):
            print(f"[book] note: the page of {name} shows an earlier execution (its source, parameters, the library "
                  "or the published records changed since); build without --only to bring it up to date", flush=True)
    return runs


def _report(run: NotebookRun) -> None:
    status = "cached" if run.cached else f"executed in {run.seconds:.1f} s"
    print(f"[book] {run.name}: {status}", flush=True)


def _execute_side_by_side(names: list[str], profile: str, out_dir: Path, parameters: Mapping[str, Any],
                          force: bool, root: Path, inputs: str, jobs: int) -> list[NotebookRun]:
    """Execute ``names``, up to ``jobs`` at once in ``_toc.yml`` order, each in a worker process of
    :mod:`bindcore.runner` with ``cores // jobs`` cores (its context's ``cpus``); a page reading other
    chapters waits for all before it. Logs go to ``<out_dir>/.logs/<name>.log``; once the others
    finish, a failure raises :class:`NotebookExecutionError` with the end of its log."""
    from bindcore.runner import LocalExecutor, SweepError, Task, cpu_budget, run_tasks

    logs = out_dir / ".logs"
    logs.mkdir(parents=True, exist_ok=True)
    owner = os.getpid()
    tasks = [Task(_execute, (name, profile, out_dir, parameters.get(name), force, root, inputs, owner), name,
                  logs / f"{name}.log", after_earlier=waits_for_earlier(name)) for name in names]
    for task in tasks:
        task.log.write_text("", encoding="utf-8")
    print(f"[book] executing {len(names)} chapters, {jobs} at once (logs: {shown_path(logs)})", flush=True)
    try:
        runs = run_tasks(tasks, LocalExecutor(jobs, threads=max(1, cpu_budget() // jobs)), desc="[book] chapters")
    except SweepError as exc:
        raise NotebookExecutionError("\n\n".join(
            f"{f.task.label}: {f.error}\n{f.task.log.read_text(encoding='utf-8')[-3000:]}" for f in exc.failures
        )) from None
    finally:  # the work folders of this build's executions cut short (Ctrl-C, SIGTERM), no other build's
        for name in names:
            for work in out_dir.glob(f".{name}.{owner}.*"):
                shutil.rmtree(work, ignore_errors=True)
    for name in names:
        _report(runs[name])
    return [runs[name] for name in names]


RECOMPUTED_RESULTS = "recomputed-results"  # the result store of a --recompute build, in its build folder


@contextmanager
def recomputing(build_dir: Path) -> Iterator[Path]:
    """Inside, chapters read no published record and an emptied result store
    (``<build_dir>/recomputed-results``), so nothing computed before is reused. Yields the store;
    refused while another recomputing build holds it."""
    store = Path(build_dir) / RECOMPUTED_RESULTS
    store.parent.mkdir(parents=True, exist_ok=True)
    lock = flock(store.parent / f".{RECOMPUTED_RESULTS}.lock", block=False)
    if lock is None:
        raise ValueError(f"another `bindcore book --recompute` is running in {build_dir}: wait for it to "
                         "finish, or give this one another --build-dir")
    try:
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        with in_environment(**{RESULTS_ENV: str(store)}, **context_environment(published=False)):
            yield store
    finally:
        os.close(lock)


def _absolute(path: Path | str) -> Path:
    """A relative build directory is taken relative to the current directory."""
    return Path(path).resolve()


def slowest_cells(executed: Path | str, n: int = 3) -> list[dict[str, Any]]:
    """The ``n`` slowest code cells of an executed notebook: index, seconds and first source line."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    cells = []
    for i, cell in enumerate(nb.cells):
        duration = (cell.metadata.get("papermill") or {}).get("duration")
        if cell.cell_type == "code" and duration is not None:
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            cells.append({"cell": i, "seconds": round(float(duration), 2), "source": first[:100]})
    return sorted(cells, key=lambda c: -c["seconds"])[:n]


def build_times(runs: list[NotebookRun], profile: str, html_seconds: float, total_seconds: float) -> dict[str, Any]:
    """A build's timings: per chapter its execution time (cached: the reused execution's) and slowest
    cells; the HTML and total times; the machine."""
    import nbformat

    from bindcore.store import machine_info

    chapters = []
    for run in runs:
        meta = nbformat.read(str(run.path), as_version=4).metadata.get(METADATA_KEY, {})
        chapters.append({"chapter": run.name, "cached": run.cached,
                         "seconds": round(run.seconds if not run.cached else meta.get("seconds", 0.0), 1),
                         "slowest_cells": slowest_cells(run.path), "records": meta.get("records")})
    return {"profile": profile, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info(),
            "chapters": chapters, "html_seconds": round(html_seconds, 1), "total_seconds": round(total_seconds, 1)}


def build_book(
    profile: str = "quick",
    build_dir: Path | str = "_build",
    force: bool = False,
    only: Iterable[str] | None = None,
    *,
    strict: bool = False,
    root: Path | str | None = None,
    recompute: bool = False,
    jobs: int = 1,
) -> Path:
    """Execute the notebooks (:func:`execute_book`), render them, return ``<build_dir>/html/index.html``."""
    root = _resolve_root(root)
    start = time.perf_counter()
    runs = execute_book(profile, build_dir, force=force, only=only, root=root, recompute=recompute, jobs=jobs)
    html_start = time.perf_counter()
    index = build_html(profile, build_dir, force=force, strict=strict, root=root)
    html_seconds = time.perf_counter() - html_start
    write_build_times(build_times(runs, profile, html_seconds, time.perf_counter() - start), index.parent)
    print(f"[book] open {index}", flush=True)
    return index


def execute_and_time(profile: str, build_dir: Path | str, **execute: Any) -> list[NotebookRun]:
    """:func:`execute_book` without the HTML, its timings written to ``<build_dir>/build-times.json``."""
    start = time.perf_counter()
    runs = execute_book(profile, build_dir, **execute)
    write_build_times(build_times(runs, profile, 0.0, time.perf_counter() - start), Path(build_dir))
    return runs


def write_build_times(times: dict[str, Any], folder: Path) -> Path:
    """Write :func:`build_times` to ``folder/build-times.json`` and print a summary."""
    folder.mkdir(parents=True, exist_ok=True)
    path = atomic_write_bytes(folder / BUILD_TIMES, json.dumps(times, indent=1).encode("utf-8"))
    print(f"[book] summary (profile={times['profile']}):", flush=True)
    for chapter in times["chapters"]:
        status = (f"cached (executed in {chapter['seconds']:.1f} s)" if chapter["cached"]
                  else f"{chapter['seconds']:8.1f} s")
        if (r := chapter.get("records")) and not chapter["cached"]:
            status += f"  records: {r['published'] + r['local']} reused, {r['computed']} computed"
        slow = "; ".join(f"{c['seconds']:.1f} s: {c['source']}" for c in chapter["slowest_cells"])
        print(f"[book]   {chapter['chapter']:<40} {status}" + (f"   slowest cells: {slow}" if slow else ""), flush=True)
    executed = [c["records"] for c in times["chapters"] if not c["cached"] and c.get("records")]
    if executed:
        n = {k: sum(r[k] for r in executed) for k in ("published", "local", "computed")}
        print(f"[book]   records of the {len(executed)} executed chapter(s): {n['published'] + n['local']} reused "
              f"({n['published']} published, {n['local']} local), {n['computed']} computed", flush=True)
    if times["html_seconds"]:
        print(f"[book]   {'HTML build':<40} {times['html_seconds']:8.1f} s", flush=True)
    print(f"[book]   {'total':<40} {times['total_seconds']:8.1f} s", flush=True)
    print(f"[book] measured times: {path}", flush=True)
    return path
