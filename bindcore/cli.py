"""Command line: ``bindcore book / sync / train / sweep / publish / data make`` (typer). An
expected failure (a bad option, a field out of range, a missing device or path) is one line on
stderr naming it, exit code 2; Ctrl-C and SIGTERM end a command cleanly with exit code 130 or 143."""

import errno
import json
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from bindcore.runtime import PROFILES, RECIPE_PROFILES

EXIT_USAGE = 2  # an expected failure: bad options, config or paths

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode="markdown",
                  help="bindcore: the library behind the book 'How can embedding models bind concepts?'")
data_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="make the book's datasets (CLEVR-2D, CLEVR-like 3-D, captions)")
app.add_typer(data_app, name="data")


class OptionError(ValueError):
    """An expected failure caused by one command-line option (``option``): reported as
    one line naming it, exit code 2."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


def _path(text: str) -> Path:
    """A path option: any text but the empty one (which ``Path`` reads as the current folder)."""
    if not text.strip():
        raise typer.BadParameter("an empty path (give . for the current folder)")
    return Path(text)


def _amount(low_open: bool) -> Callable[[str], float]:
    """A resource amount per run: a finite number > 0 (``low_open``) or >= 0."""
    def parse(text: str) -> float:
        from bindcore.settings import coerce

        try:
            value = coerce(text, float)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        if value < 0 or (low_open and value == 0):
            raise typer.BadParameter(f"must be a number {'>' if low_open else '>='} 0, got {text!r}")
        return value
    return parse


def _fail(command: str, exc: BaseException) -> int:
    """Report an expected failure of a command in one line; the usage exit code."""
    message = str(exc) if not isinstance(exc, OSError) or not exc.filename else f"{exc.strerror}: {exc.filename}"
    print(f"bindcore {command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def check_option(option: str, check: Callable[[Any], object], value: Any) -> None:
    """``check(value)`` (nothing when ``value`` is None), its ``ValueError`` or ``OSError``
    turned into an :class:`OptionError` naming ``option``."""
    if value is None:
        return
    try:
        check(value)
    except (ValueError, OSError) as exc:
        raise OptionError(option, str(exc)) from None


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("-v", "--verbose", help="debug logging")] = False) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, datefmt="%H:%M:%S",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


# ---------------------------------------------------------------------------------
# book, sync
# ---------------------------------------------------------------------------------
@app.command()
def book(
    profile: Annotated[Literal[PROFILES], typer.Option(help=(
        "workload size: smoke (CI), quick (laptop CPU, default), paper (GPU)"))] = "quick",
    build_dir: Annotated[Path | None, typer.Option(parser=_path, help=(
        "output folder (default: _build in the repository)"))] = None,
    force: Annotated[bool, typer.Option("--force", help="re-execute every notebook and re-render every page")] = False,
    only: Annotated[list[str] | None, typer.Option(metavar="NAME", help=(
        "execute only this notebook (name without suffix); repeatable"))] = None,
    no_html: Annotated[bool, typer.Option("--no-html", help="execute the notebooks, skip the HTML build")] = False,
    jobs: Annotated[int, typer.Option(min=1, help=(
        "chapters executed side by side, each in its own process with its share of the cores (default 1: one "
        "after another); a page that reads other chapters waits for those before it"))] = 1,
    recompute: Annotated[bool, typer.Option("--recompute", help=(
        "compute every number from scratch: every notebook executed again, no published record read, results "
        "in a fresh store (<build-dir>/recomputed-results); one such build at a time in a build folder"))] = False,
    strict: Annotated[bool, typer.Option("--strict", help="fail the HTML build on any Sphinx warning (-W --keep-going)")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help=(
        "execute every chapter with its loop counts, steps and data sizes cut to seconds "
        "(notebooks/profiles/dry-run/, on top of the profile's files; with --profile paper: the paper path on a "
        "CPU) into <build-dir>/dry-run; no HTML"))] = False,
) -> int:
    """Execute every notebook of _toc.yml with papermill on a profile, then render the book with Jupyter
    Book into BUILD_DIR/html. Notebooks whose source, parameters and bindcore code are unchanged are not
    re-executed."""
    from bindcore.book import build
    from bindcore.book.paths import repo_root
    from bindcore.io import check_writable_folder
    from bindcore.parameters import dry_run_parameters

    build_dir = build_dir if build_dir is not None else repo_root() / "_build"
    try:
        check_option("--build-dir", check_writable_folder, build_dir)
    except OptionError as exc:
        return _fail("book", exc)
    run = dict(force=force, only=only, recompute=recompute, jobs=jobs)
    try:
        if dry_run:
            build.execute_book(profile, build_dir / "dry-run", parameters=dry_run_parameters(), **run)
        elif no_html:
            build.execute_and_time(profile, build_dir, **run)
        else:
            build.build_book(profile, build_dir, strict=strict, **run)
    except (build.NotebookExecutionError, build.BookBuildError, ValueError, FileNotFoundError) as exc:
        print(f"bindcore book: error: {exc}", file=sys.stderr)
        return 1
    return 0


@app.command()
def sync(check: Annotated[bool, typer.Option("--check", help=(
        "write nothing; exit 1 if any .ipynb or quick profile file is out of sync"))] = False) -> int:
    """Sync notebooks/*.ipynb with their .py sources (jupytext --sync, inputs from the most recently
    modified file; outputs and execution counts stripped), and copy each parameters cell's values to
    notebooks/profiles/quick/NAME.yaml."""
    from bindcore.book.pairs import sync_pairs

    changed = sync_pairs(check=check)
    for path in changed:
        print(f"{'out of sync' if check else 'rewritten'}: {path}")
    if not changed:
        print("all notebook pairs in sync")
    return 1 if (check and changed) else 0


# ---------------------------------------------------------------------------------
# train, sweep
# ---------------------------------------------------------------------------------
@dataclass
class RunOptions:
    """The options of ``train`` and ``sweep`` that make a config and say where it runs."""

    profile: str | None = None
    config: Path | None = None
    sets: list[str] = field(default_factory=list)
    device: str | None = None
    results: Path | None = None

    def overrides(self) -> dict[str, str]:
        """``--set`` pairs as {field: value text}, each read as its TrainConfig field's type by the
        config (``lr=1e-3``, ``heldout_as_negatives=false``, ``steps=1e4``, ``candidates=batch``)."""
        out = {}
        for pair in self.sets:
            key, sep, raw = pair.partition("=")
            if not sep or not key.strip():
                raise OptionError("--set", f"expects FIELD=VALUE, got {pair!r}")
            out[key.strip()] = raw
        return out


ProfileOption = Annotated[Literal[RECIPE_PROFILES] | None, typer.Option(help=(
    "recipe to start from (default quick; scale: the §5.2 recipe up to the paper's smaller object space); with "
    "--config: the recipe of the fields the file leaves out"))]
ConfigOption = Annotated[Path | None, typer.Option(parser=_path, help=(
    "a TrainConfig as JSON (fields it leaves out: --profile's, else the paper's defaults)"))]
SetOption = Annotated[list[str] | None, typer.Option("--set", metavar="FIELD=VALUE", help=(
    "override one TrainConfig field, e.g. --set n_values=20; repeatable (--set scene_input=pixels: the pixel "
    "recipe of appendix E and its fields, e.g. level=speckle)"))]
DeviceOption = Annotated[str | None, typer.Option(help="cuda, cuda:N or cpu (default: cuda when present)")]
ThreadsOption = Annotated[int | None, typer.Option(min=1, help="CPU threads for torch (>= 1)")]
ResultsOption = Annotated[Path | None, typer.Option(parser=_path, help="result store root (default: results/)")]
QuietOption = Annotated[bool, typer.Option("--quiet", help="no progress bar")]


def config_of(opts: RunOptions, plan_steps: bool = True):
    """The config of ``--config`` / ``--profile`` / ``--set``; ``plan_steps``: at the scale
    plan's steps for its size (:func:`plan_point`)."""
    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.training import TrainConfig

    overrides = opts.overrides()
    if opts.config is not None:
        try:
            base = json.loads(opts.config.read_text())
        except FileNotFoundError:
            raise OptionError("--config", f"no such file: {opts.config}") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise OptionError("--config", f"{opts.config} is not a readable JSON file ({exc})") from None
        if not isinstance(base, dict):
            raise OptionError("--config", f"{opts.config} holds no JSON object of TrainConfig fields")
        if opts.profile is not None:  # the profile's recipe for the fields the file leaves out
            return recipe(opts.profile, **{**base, **overrides})
        cfg = TrainConfig.from_dict({**base, **overrides})
        missing = [f for f in cfg.to_dict() if f not in base and f not in overrides and f != "scene_input"]
        if missing:
            print(f"bindcore: --config {opts.config} leaves {len(missing)} fields to TrainConfig's defaults, the "
                  f"paper's ({', '.join(missing)}); add --profile NAME to take them from a profile", file=sys.stderr)
        return cfg
    cfg = recipe(opts.profile or "quick", **overrides)
    return plan_point(opts, cfg) if plan_steps else cfg


def plan_point(opts: RunOptions, cfg):
    """``--profile scale`` without ``--config``: the scale plan's steps and layers for the
    config's point, except those set by ``--set`` (:func:`bindcore.controlled.recipes.scale_point`)."""
    from bindcore.controlled.recipes import scale_point

    if opts.profile != "scale" or opts.config is not None:
        return cfg
    return scale_point(cfg, keep=set(opts.overrides()))


def checked_config(opts: RunOptions, device_here: bool = True):
    """The config of a train or sweep command, with its device (where it runs here) and
    result store checked: every expected failure before any work."""
    from bindcore.io import check_writable_folder
    from bindcore.runtime import check_device
    from bindcore.store import default_root

    cfg = config_of(opts)
    if device_here:
        check_option("--device", check_device, opts.device)
    root = opts.results if opts.results is not None else default_root()
    check_option("--results", check_writable_folder, root / cfg.store_kind.name)  # the root and its kind's folder
    return cfg


@app.command()
def train(profile: ProfileOption = None, config: ConfigOption = None, sets: SetOption = None,
          device: DeviceOption = None, threads: ThreadsOption = None, results: ResultsOption = None,
          quiet: QuietOption = False) -> int:
    """Train the dual encoder of one TrainConfig and store its result under the config's hash; asking
    again returns the stored result, a killed run resumes."""
    from bindcore.controlled.runs import train
    from bindcore.controlled.training import Diverged
    from bindcore.runtime import set_threads
    from bindcore.store import ResultStore

    opts = RunOptions(profile, config, sets or [], device, results)
    try:
        cfg = checked_config(opts)
        store = ResultStore(results)
    except (ValueError, FileNotFoundError) as exc:
        return _fail("train", exc)
    set_threads(threads)
    try:
        rec = train(cfg, store=store, device=device, progress=not quiet)
    except Diverged as exc:
        return _fail("train", exc)
    print(json.dumps({k: rec.get(k) for k in ("hash", "metrics", "bag_of_concepts", "seconds", "source", "path")},
                     indent=2))
    return 0


# the sweep axes: option, TrainConfig field (each takes one or more values: --values 10 14)
AXES = {"--coverages": "coverage", "--values": "n_values", "--concepts": "n_concepts", "--seeds": "seed"}


def sweep_configs(opts: RunOptions, axes: dict[str, list[Any]]) -> list:
    """The configs of a sweep command: every combination of the ``axes`` given ({field: values})
    on the base config of ``--profile`` / ``--config`` / ``--set``. ``--profile scale`` without
    ``--config``: the scale plan (:func:`bindcore.controlled.recipes.scale_plan`) with the ``--set``
    fields applied, and the axes given replace the plan's values of those fields while the others stay
    the plan's (``--seeds 3 4``: the whole plan at seeds 3 and 4; ``--values 10``: that size at the
    plan's coverages and seeds), each size at the plan's steps unless ``--set steps=`` says otherwise."""
    from bindcore.controlled.recipes import scale_plan, scale_split_seeds
    from bindcore.sweep import grid

    base = config_of(opts, plan_steps=False)
    axes = {k: v for k, v in axes.items() if v}
    if opts.profile != "scale" or opts.config is not None:
        return [plan_point(opts, c) for c in grid(base, **axes)]
    sets = opts.overrides()
    plan = [c.with_(**{k: getattr(base, k) for k in sets}) for c in scale_plan() if c.split_seed == 0]
    # each point of the plan with the axes' values (no axis: the point itself), at its point's
    # steps and on its point's object splits (unless --set names them); in the plan's order, each config once
    return list(dict.fromkeys(plan_point(opts, s) for point in plan
                              for c in grid(point.with_(steps=base.steps), **axes)
                              for s in ([c] if "split_seed" in sets else
                                        [c.with_(split_seed=k) for k in scale_split_seeds(c.n_concepts, c.n_values,
                                                                                          c.coverage)])))


def sweep_executor(executor: str, workers: int | None, address: str | None, cpus_per_run: float | None,
                   gpus_per_run: float | None, device: str | None):
    """The executor of a sweep command, its options checked and, for Ray, connected:
    a missing Ray, an address with no cluster behind it or a GPU device without GPUs
    per run are refused before any work."""
    from bindcore.runner import LocalExecutor, RayExecutor, _import_ray

    if executor == "local":
        for option, value in (("--address", address), ("--cpus-per-run", cpus_per_run),
                              ("--gpus-per-run", gpus_per_run)):
            if value is not None:
                raise OptionError(option, "only with --executor ray")
        return LocalExecutor(workers)
    check_option("--executor", lambda _: _import_ray(), executor)
    gpus = gpus_per_run or 0.0
    if device and device.startswith("cuda") and not gpus:
        raise OptionError("--gpus-per-run", f"--device {device} with --executor ray needs --gpus-per-run > 0 "
                          "(Ray hides the GPUs from runs that ask for none)")
    ray = RayExecutor(address=address, cpus_per_run=cpus_per_run or 1.0, gpus_per_run=gpus, workers=workers)
    check_option("--address", lambda _: ray.start(), address or "local instance")
    option, value = ("--gpus-per-run", gpus_per_run) if gpus else ("--cpus-per-run", cpus_per_run)
    check_option(option, lambda _: ray.check_resources(), value)
    return ray


@app.command()
def sweep(
    profile: ProfileOption = None, config: ConfigOption = None, sets: SetOption = None, device: DeviceOption = None,
    threads: ThreadsOption = None, results: ResultsOption = None, quiet: QuietOption = False,
    coverages: Annotated[list[str] | None, typer.Option(metavar="VALUE ...", help="coverage values")] = None,
    values: Annotated[list[str] | None, typer.Option(metavar="VALUE ...", help="values per concept (V)")] = None,
    concepts: Annotated[list[str] | None, typer.Option(metavar="VALUE ...", help="number of concepts (C)")] = None,
    seeds: Annotated[list[str] | None, typer.Option(metavar="VALUE ...", help="training seeds")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help=(
        "runs at once (local default: CPU cores, 1 on a GPU; ray default: what the cluster holds)"))] = None,
    stack: Annotated[int, typer.Option(min=1, help=(
        "token runs that differ only in seed, split, coverage or sampling train together, up to this many in one "
        "process (on a CUDA GPU: stacked parameters; elsewhere one by one; each run is its own record; default 1: "
        "alone)"))] = 1,
    executor: Annotated[Literal["local", "ray"], typer.Option(help=(
        "local (default: this machine) or ray (a Ray cluster, or a local Ray instance)"))] = "local",
    address: Annotated[str | None, typer.Option(help=(
        "ray: the cluster, 'auto', HOST:PORT or ray://HOST:10001 (default: RAY_ADDRESS, else a new local Ray "
        "instance)"))] = None,
    cpus_per_run: Annotated[float | None, typer.Option(parser=_amount(True), help=(
        "ray: CPUs per run (default 1)"))] = None,
    gpus_per_run: Annotated[float | None, typer.Option(parser=_amount(False), help=(
        "ray: GPUs per run (default 0)"))] = None,
    publish: Annotated[bool, typer.Option("--publish", help=(
        "copy each finished run's config and result (no weights) to published/, where the book reads them"))] = False,
) -> int:
    """Train a grid of configs (coverage x V x ...): every combination of the given values; stored runs
    are reused. Runs go to an executor: local (this machine) or ray (one Ray task per run; the results
    folder must be shared by every node)."""
    from bindcore.runner import SweepError
    from bindcore.runtime import set_threads
    from bindcore.store import ResultStore
    from bindcore.sweep import run_sweep

    opts = RunOptions(profile, config, sets or [], device, results)
    axes = {"coverage": coverages, "n_values": values, "n_concepts": concepts, "seed": seeds}
    try:
        checked_config(opts, device_here=executor == "local")
        configs = sweep_configs(opts, axes)
        runner = sweep_executor(executor, workers, address, cpus_per_run, gpus_per_run, device)
        store = ResultStore(results)
    except (ValueError, FileNotFoundError) as exc:
        return _fail("sweep", exc)
    set_threads(threads)  # the runs trained in this process (--workers 1); worker processes use one each
    t0 = time.perf_counter()
    try:
        recs = run_sweep(configs, store=store, device=device, progress=not quiet, executor=runner, stack=stack)
    except SweepError as exc:
        print(f"bindcore sweep: {exc}", file=sys.stderr)
        return 1
    if publish:
        store = ResultStore(results)
        for cfg in configs:
            entry = store.find(cfg.store_kind, cfg.to_dict())
            if entry is not None and entry.source == "local":
                try:
                    print(f"published {store.publish(entry)}")
                except ValueError as exc:
                    print(f"not published: {exc}", file=sys.stderr)
    for cfg, rec in zip(configs, recs):
        print(f"C={cfg.n_concepts} V={cfg.n_values} coverage={cfg.coverage:g} seed={cfg.seed}: "
              + " ".join(f"{k}={v:.3f}" for k, v in sorted(rec["metrics"].items()) if k.startswith("test_")))
    print(f"{len(recs)} runs in {time.perf_counter() - t0:.1f} s (executor {executor}; results in "
          f"{ResultStore(results).root})")
    return 0


# ---------------------------------------------------------------------------------
# data make, publish
# ---------------------------------------------------------------------------------
DATASETS = ("clevr2d", "clevr2d-singles", "clevr3d", "clevr3d-singles", "clevr3d-three", "text")


def make_dataset(kind: str, size: int | None = None, seed: int = 0, n_scenes: int | None = None,
                 occlusion: bool = False, jitter: float = 0.0):
    """Build one of the book's generated datasets by name (see ``bindcore data make``)."""
    from bindcore.data import clevr2d, clevr3d, text

    if kind == "clevr2d":
        return clevr2d.make_clevr2d(**({"size": size} if size else {}), jitter=jitter, seed=seed)
    if kind == "clevr2d-singles":
        return clevr2d.make_clevr2d_singles(**({"size": size} if size else {}))
    sz = {"size": (size, size * 3 // 4)} if size else {}
    if kind == "clevr3d":
        return clevr3d.make_clevr3d(**sz, seed=seed)
    if kind == "clevr3d-singles":
        return clevr3d.make_clevr3d_singles(**sz)
    if kind == "clevr3d-three":
        return clevr3d.make_clevr3d_three(n_scenes or 100, occlusion=occlusion, seed=seed, **sz)
    if kind == "text":
        return text.make_text_space(n_scenes=n_scenes, seed=seed)
    raise ValueError(f"dataset must be one of {DATASETS}, got {kind!r}")


# the options of data make each dataset reads (any other given is refused, not ignored)
DATA_OPTIONS = {"--size": ("clevr2d", "clevr2d-singles", "clevr3d", "clevr3d-singles", "clevr3d-three"),
                "--scenes": ("clevr3d-three", "text"), "--occlusion": ("clevr3d-three",), "--jitter": ("clevr2d",),
                "--seed": ("clevr2d", "clevr3d", "clevr3d-three", "text")}


@data_app.command("make")
def data_make(
    kind: Annotated[Literal[DATASETS], typer.Argument()],
    out: Annotated[Path, typer.Option(parser=_path, help=(
        "output folder (created; a folder that is not empty is refused unless --overwrite)"))],
    overwrite: Annotated[bool, typer.Option("--overwrite", help=(
        "replace the dataset files (labels.csv, metadata.json, captions.csv, images) in a folder that is not "
        "empty; other files stay"))] = False,
    force: Annotated[bool, typer.Option("--force", help=(
        "with --overwrite: also delete dataset files that bindcore did not write there (e.g. the authors' images "
        "named by their labels.csv; they are listed)"))] = False,
    size: Annotated[int | None, typer.Option(min=1, help="image width in pixels (default: the dataset's)")] = None,
    seed: Annotated[int, typer.Option()] = 0,
    scenes: Annotated[int | None, typer.Option(min=1, help="number of scenes (three-object and text sample)")] = None,
    occlusion: Annotated[bool, typer.Option("--occlusion", help="three-object scenes with occlusion")] = False,
    jitter: Annotated[float, typer.Option(help="CLEVR-2D position/size jitter")] = 0.0,
) -> int:
    """Write a generated dataset: images (PNG), labels.csv in the authors' release layout, metadata.json
    and captions.csv into --out."""
    from bindcore.data.core import check_output_folder

    t0 = time.perf_counter()
    given = {"--size": size is not None, "--scenes": scenes is not None, "--occlusion": occlusion,
             "--jitter": jitter != 0.0, "--seed": seed != 0}
    try:
        for option, kinds in DATA_OPTIONS.items():
            if given[option] and kind not in kinds:
                raise OptionError(option, f"{kind} does not read it (only {', '.join(kinds)})")
        if size is not None and not 16 <= size <= 4096:
            raise OptionError("--size", f"must lie in [16, 4096] pixels, got {size}")
        if force and not overwrite:
            raise OptionError("--force", "only with --overwrite")
        check_option("--out", lambda o: check_output_folder(o, overwrite, force), out)  # before generating
        ds = make_dataset(kind, size=size, seed=seed, n_scenes=scenes, occlusion=occlusion, jitter=jitter)
    except ValueError as exc:
        return _fail("data make", exc)
    written = ds.write(out, overwrite=overwrite, force=force)
    print(f"{kind}: {len(ds)} scenes ({ds.metadata()}) written to {written} in {time.perf_counter() - t0:.1f} s")
    return 0


def publishable_kinds() -> dict:
    """The store kinds whose records a book build reuses from published/ (by folder
    name): training runs (token and pixel inputs), approximator sweeps, geometry
    analyses, §5.1's probes and embeddings (their arrays: a few MB for the quick book's images)."""
    from bindcore.analysis.complexity import APPROX_STORE_KIND
    from bindcore.analysis.embedding_sets import PROBES_KIND
    from bindcore.analysis.geometry_sets import GEOMETRY_STORE_KIND
    from bindcore.controlled.pixels import PIXEL_STORE_KIND
    from bindcore.controlled.training import STORE_KIND
    from bindcore.encoders.cache import EMBEDDINGS

    return {k.name: k for k in (STORE_KIND, PIXEL_STORE_KIND, APPROX_STORE_KIND, GEOMETRY_STORE_KIND, PROBES_KIND,
                                EMBEDDINGS)}


@app.command()
def publish(
    results: ResultsOption = None,
    kind: Annotated[list[str] | None, typer.Option(metavar="NAME", help=(
        "only this kind of record (a folder of the store: train-2, train-pixels-1, approximators-1, geometry-1, "
        "probes-1, embeddings); repeatable (default: all)"))] = None,
    weights: Annotated[bool, typer.Option("--weights", help=(
        "also copy the weights that an analysis loaded from this store (e.g. the §5.2 models that §4 embeds), "
        "where each file is small (larger ones are published without, and listed)"))] = False,
    all_weights: Annotated[bool, typer.Option("--all-weights", help="also copy every record's weights, where each file is small")]
    = False,
) -> int:
    """Copy every finished record of the current versions of the kinds from a result store (e.g. the store of
    `bindcore book --recompute`, BUILD_DIR/recomputed-results) to published/: its config and result, which
    name the machine, the time and the commit that made it."""
    from bindcore.store import ResultStore

    kinds = publishable_kinds()
    try:
        for name in kind or ():
            if name not in kinds:
                raise OptionError("--kind", f"{name!r} is not one of {', '.join(kinds)}")
        if weights and all_weights:
            raise OptionError("--all-weights", "not allowed with --weights")
        store = ResultStore(results)
        if not store.root.is_dir():
            raise OptionError("--results", f"{store.root} is not a folder")
        rows = store.publish_all([kinds[n] for n in (kind or kinds)],
                                 weights="all" if all_weights else "read" if weights else None)
    except ValueError as exc:
        return _fail("publish", exc)
    for entry, dest, what in rows:
        print(f"{entry.kind}/{entry.path.name}: " + (f"published to {dest}, {what}" if dest else what))
    print(f"{sum(r[1] is not None for r in rows)} of {len(rows)} records of {store.root} published to "
          f"{store.published}")
    return 0


# ---------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------
# failures of the disk, not of bindcore: one line, exit code 1 (state is clean: writes are atomic)
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (as Ctrl-C raises ``KeyboardInterrupt``) so that
    a command unwinds cleanly."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def _spread(argv: Sequence[str]) -> list[str]:
    """``--values 10 14`` as ``--values 10 --values 14``: a sweep axis takes the values that follow it."""
    out, axis = [], None
    for arg in argv:
        if arg in AXES:
            axis = arg
        elif axis is not None and (not arg.startswith("-") or re.fullmatch(r"-[\d.]\S*", arg)):
            if out[-1] != axis:
                out.append(axis)
        else:
            axis = None
        out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = _spread(sys.argv[1:] if argv is None else argv)
    command = " ".join(a for a in argv[:2] if a in ("book", "sync", "train", "sweep", "publish", "data", "make"))
    main_thread = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    group = typer.main.get_command(app)
    try:
        with group.make_context("bindcore", argv) as ctx:
            return group.invoke(ctx) or 0
    except typer.Exit as exc:  # --help
        return exc.exit_code
    except typer.TyperException as exc:  # a usage error: an unknown option, a value of the wrong type
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "bindcore"
        if exc.format_message().strip():  # (empty: a command without arguments, its help shown)
            print(f"{where}: error: {exc.format_message()} (see {where} --help)", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        where = f": {exc.filename}" if exc.filename else ""
        print(f"bindcore {command}: error: {exc.strerror or exc}{where}; nothing half written is left, and running "
              "the same command again resumes", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"bindcore {command}: interrupted (Ctrl-C); nothing half written is left, and running the same "
              "command again resumes", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated:
        print(f"bindcore {command}: terminated (SIGTERM); nothing half written is left, and running the same "
              "command again resumes", file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
