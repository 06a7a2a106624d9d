"""Command line: ``bindcore <command> ...``; each command is a ``register_<command>``
function listed in ``REGISTRARS``. An expected failure (a bad option, a field out of
range, a missing device or path) is one line on stderr naming it, exit code 2; Ctrl-C
and SIGTERM end a command cleanly with exit code 130 or 143."""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from bindcore.runtime import PROFILES, RECIPE_PROFILES

EXIT_USAGE = 2  # an expected failure: bad options, config or paths


class OptionError(ValueError):
    """An expected failure caused by one command-line option (``option``): reported as
    one line naming it, exit code 2."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


class Parser(argparse.ArgumentParser):
    """argparse with its errors (unknown option, a value of the wrong type) as one line
    on stderr, exit code 2, instead of the usage text followed by the error."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def path_option(text: str) -> Path:
    """argparse type of a path: any text but the empty one (which ``Path`` reads as the
    current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (give . for the current folder)")
    return Path(text)


def positive_int(text: str) -> int:
    """argparse type of a count (threads, workers): an integer >= 1."""
    from bindcore.settings import Rule

    try:
        return Rule(int, low=1).check(text, "value")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None


def field_value(name: str) -> Callable[[str], object]:
    """argparse type of a sweep axis: the text parsed as the TrainConfig field ``name``'s
    declared type, as ``--set`` parses it (``--values 1e1`` is 10; ``--values 4.5`` an error)."""
    from bindcore.controlled.training import field_types
    from bindcore.settings import coerce

    def parse(text: str) -> object:
        try:
            return coerce(text, field_types()[name], f"TrainConfig.{name}")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = name
    return parse


def _fail(args: argparse.Namespace, exc: BaseException) -> int:
    """Report an expected failure of a command in one line; the usage exit code."""
    command = " ".join(x for x in (getattr(args, "command", None), getattr(args, "data_command", None)) if x)
    message = str(exc) if not isinstance(exc, OSError) or not exc.filename else f"{exc.strerror}: {exc.filename}"
    print(f"bindcore {command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def check_option(option: str, check: Callable[[object], object], value: object) -> None:
    """``check(value)`` (nothing when ``value`` is None), its ``ValueError`` or ``OSError``
    turned into an :class:`OptionError` naming ``option``."""
    if value is None:
        return
    try:
        check(value)
    except (ValueError, OSError) as exc:
        raise OptionError(option, str(exc)) from None


def _default_build_dir() -> Path:
    from bindcore.book.paths import repo_root

    return repo_root() / "_build"


def register_book(subparsers) -> None:
    p = subparsers.add_parser(
        "book",
        help="execute the notebooks (papermill) and build the HTML book (Jupyter Book)",
        description="Execute every notebook of _toc.yml with papermill on a profile, then render "
        "the book with Jupyter Book into <build-dir>/html. Notebooks whose source, parameters "
        "and bindcore code are unchanged are not re-executed.",
    )
    p.add_argument("--profile", choices=PROFILES, default="quick",
                   help="workload size: smoke (CI), quick (laptop CPU, default), paper (GPU)")
    p.add_argument("--build-dir", type=path_option, default=None,
                   help="output folder (default: _build in the repository)")
    p.add_argument("--force", action="store_true",
                   help="re-execute every notebook and re-render every page")
    p.add_argument("--only", action="append", metavar="NAME", default=None,
                   help="execute only this notebook (name without suffix); repeatable")
    p.add_argument("--no-html", action="store_true", help="execute the notebooks, skip the HTML build")
    p.add_argument("--jobs", type=positive_int, default=1,
                   help="chapters executed side by side, each in its own process with its share of the cores "
                   "(default 1: one after another); a page that reads other chapters waits for those before it")
    p.add_argument("--recompute", action="store_true",
                   help="compute every number from scratch: every notebook executed again, no published record "
                   "read, results in a fresh store (<build-dir>/recomputed-results)")
    p.add_argument("--strict", action="store_true",
                   help="fail the HTML build on any Sphinx warning (-W --keep-going)")
    p.add_argument("--dry-run", action="store_true",
                   help="execute every chapter with its loop counts, steps and data sizes cut to seconds "
                        "(notebooks/profiles/dry-run/, on top of the profile's files; with --profile paper: the paper path "
                        "on a CPU) "
                        "into <build-dir>/dry-run; no HTML")
    p.set_defaults(func=_run_book)


def _run_book(args: argparse.Namespace) -> int:
    from bindcore.book import build as book
    from bindcore.io import check_writable_folder

    build_dir = args.build_dir if args.build_dir is not None else _default_build_dir()
    try:
        check_option("--build-dir", check_writable_folder, build_dir)
    except OptionError as exc:
        return _fail(args, exc)
    try:
        if args.dry_run:
            from bindcore.book.profiles import dry_run_parameters

            book.execute_book(args.profile, Path(build_dir) / "dry-run", force=args.force, only=args.only,
                              parameters=dry_run_parameters(), recompute=args.recompute, jobs=args.jobs)
        elif args.no_html:
            book.execute_and_time(args.profile, build_dir, force=args.force, only=args.only,
                                  recompute=args.recompute, jobs=args.jobs)
        else:
            book.build_book(args.profile, build_dir, force=args.force, only=args.only, strict=args.strict,
                            recompute=args.recompute, jobs=args.jobs)
    except (book.NotebookExecutionError, book.BookBuildError, ValueError, FileNotFoundError) as exc:
        print(f"bindcore book: error: {exc}", file=sys.stderr)
        return 1
    return 0


def register_sync(subparsers) -> None:
    p = subparsers.add_parser(
        "sync",
        help="sync notebooks/*.ipynb with their .py sources (jupytext --sync, outputs stripped)",
        description="The jupytext py:percent files are the source of truth; this runs jupytext --sync "
        "on each pair (inputs from the most recently modified file) and strips outputs and "
        "execution counts from the .ipynb, and copies each parameters cell's values to "
        "notebooks/profiles/quick/<name>.yaml.",
    )
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if any .ipynb or quick profile file is out of sync")
    p.set_defaults(func=_run_sync)


def _run_sync(args: argparse.Namespace) -> int:
    from bindcore.book.pairs import sync_pairs

    changed = sync_pairs(check=args.check)
    verb = "out of sync" if args.check else "rewritten"
    for path in changed:
        print(f"{verb}: {path}")
    if not changed:
        print("all notebook pairs in sync")
    return 1 if (args.check and changed) else 0


def _parse_sets(pairs: Sequence[str] | None) -> dict[str, str]:
    """``key=value`` pairs -> {key: value text}; each value is parsed as its
    TrainConfig field's declared type (:mod:`bindcore.settings`: ``lr=1e-3``,
    ``heldout_as_negatives=false``, ``steps=1e4``, ``candidates=batch``)."""
    out = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects FIELD=VALUE, got {pair!r}")
        out[key.strip()] = raw
    return out


def _config_from_args(args: argparse.Namespace, plan_steps: bool = True):
    """The config of ``--config`` / ``--profile`` / ``--set``; ``plan_steps``: at the scale
    plan's steps for its size (:func:`_plan_steps`)."""
    import json

    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.training import TrainConfig

    overrides = _parse_sets(args.set)
    if args.config is not None:
        try:
            base = json.loads(Path(args.config).read_text())
        except FileNotFoundError:
            raise OptionError("--config", f"no such file: {args.config}") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise OptionError("--config", f"{args.config} is not a readable JSON file ({exc})") from None
        if not isinstance(base, dict):
            raise OptionError("--config", f"{args.config} holds no JSON object of TrainConfig fields")
        if args.profile is not None:  # the profile's recipe for the fields the file leaves out
            return recipe(args.profile, **{**base, **overrides})
        cfg = TrainConfig.from_dict({**base, **overrides})
        missing = [f for f in cfg.to_dict() if f not in base and f not in overrides and f != "scene_input"]
        if missing:
            print(f"bindcore {args.command}: --config {args.config} leaves {len(missing)} fields to TrainConfig's "
                  f"defaults, the paper's ({', '.join(missing)}); add --profile NAME to take them from a profile",
                  file=sys.stderr)
        return cfg
    cfg = recipe(profile_of(args), **overrides)
    return _plan_steps(args, cfg) if plan_steps else cfg


def _plan_steps(args: argparse.Namespace, cfg):
    """``--profile scale`` without ``--config``: the scale plan's steps and layers for the
    config's point, except those set by ``--set`` (:func:`bindcore.controlled.recipes.scale_point`)."""
    from bindcore.controlled.recipes import scale_point

    if profile_of(args) != "scale" or args.config is not None:
        return cfg
    return scale_point(cfg, keep=set(_parse_sets(args.set)))


def profile_of(args: argparse.Namespace) -> str:
    """The recipe profile of a train or sweep command (``--profile``, default quick)."""
    return args.profile if args.profile is not None else "quick"


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", choices=RECIPE_PROFILES, default=None,
                   help="recipe to start from (default quick; scale: the §5.2 recipe up to the paper's smaller "
                   "object space); with --config: the recipe of the fields the file leaves out")
    p.add_argument("--config", type=path_option, default=None,
                   help="a TrainConfig as JSON (fields it leaves out: --profile's, else the paper's defaults)")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE", default=None,
                   help="override one TrainConfig field, e.g. --set n_values=20; repeatable "
                   "(--set scene_input=pixels: the pixel recipe of appendix E and its fields, e.g. level=speckle)")
    p.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda when present)")
    p.add_argument("--threads", type=positive_int, default=None, help="CPU threads for torch (>= 1)")
    p.add_argument("--results", type=path_option, default=None, help="result store root (default: results/)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def register_train(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train one controlled dual encoder (or return its stored result)",
        description="Train the dual encoder of one TrainConfig and store its result under the "
        "config's hash; asking again returns the stored result, a killed run resumes.",
    )
    _add_run_options(p)
    p.set_defaults(func=_run_train)


def _check_run_options(args: argparse.Namespace, device_here: bool = True):
    """The config of a train or sweep command, with its device (where it runs here) and
    result store checked: every expected failure before any work."""
    from bindcore.io import check_writable_folder
    from bindcore.runtime import check_device
    from bindcore.store import default_root

    cfg = _config_from_args(args)
    if device_here:
        check_option("--device", check_device, args.device)
    root = args.results if args.results is not None else default_root()
    check_option("--results", check_writable_folder, root / cfg.store_kind.name)  # the root and its kind's folder
    return cfg


def _run_train(args: argparse.Namespace) -> int:
    import json

    from bindcore.controlled.runs import train
    from bindcore.runtime import set_threads
    from bindcore.store import ResultStore

    try:
        cfg = _check_run_options(args)
        store = ResultStore(args.results)
    except (ValueError, FileNotFoundError) as exc:
        return _fail(args, exc)
    set_threads(args.threads)
    from bindcore.controlled.training import Diverged

    try:
        rec = train(cfg, store=store, device=args.device, progress=not args.quiet)
    except Diverged as exc:
        return _fail(args, exc)
    summary = {k: rec.get(k) for k in ("hash", "metrics", "bag_of_concepts", "seconds", "source", "path")}
    print(json.dumps(summary, indent=2))
    return 0


def positive_number(text: str) -> float:
    """argparse type of a resource amount per run (CPUs): a finite number > 0."""
    from bindcore.settings import Rule

    try:
        return Rule(float, low=0, open_low=True).check(text, "value")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None


def non_negative_number(text: str) -> float:
    """argparse type of a resource amount per run (GPUs): a finite number >= 0."""
    from bindcore.settings import Rule

    try:
        return Rule(float, low=0).check(text, "value")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}") from None


def register_sweep(subparsers) -> None:
    from bindcore.runner import EXECUTORS

    p = subparsers.add_parser(
        "sweep",
        help="train a grid of configs (coverage x V x ...), in parallel on a CPU or on a Ray cluster",
        description="Every combination of the given values; stored runs are reused. Runs go to an "
        "executor: local (this machine) or ray (one Ray task per run; the results folder must be "
        "shared by every node).",
    )
    _add_run_options(p)
    p.add_argument("--coverages", type=field_value("coverage"), nargs="+", default=None, help="coverage values")
    p.add_argument("--values", type=field_value("n_values"), nargs="+", default=None, help="values per concept (V)")
    p.add_argument("--concepts", type=field_value("n_concepts"), nargs="+", default=None,
                   help="number of concepts (C)")
    p.add_argument("--seeds", type=field_value("seed"), nargs="+", default=None, help="training seeds")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="runs at once (local default: CPU cores, 1 on a GPU; ray default: what the cluster holds)")
    p.add_argument("--stack", type=positive_int, default=1,
                   help="token runs that differ only in seed, split, coverage or sampling train together, up to "
                   "this many in one process (on a CUDA GPU: stacked parameters; elsewhere one by one; each run is its own "
                   "record; default 1: alone)")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local (default: this machine) or ray (a Ray cluster, or a local Ray instance)")
    p.add_argument("--address", default=None,
                   help="ray: the cluster, 'auto', HOST:PORT or ray://HOST:10001 "
                   "(default: RAY_ADDRESS, else a new local Ray instance)")
    p.add_argument("--cpus-per-run", type=positive_number, default=None, help="ray: CPUs per run (default 1)")
    p.add_argument("--gpus-per-run", type=non_negative_number, default=None, help="ray: GPUs per run (default 0)")
    p.add_argument("--publish", action="store_true",
                   help="copy each finished run's config and result (no weights) to published/, where the "
                   "book reads them")
    p.set_defaults(func=_run_sweep)


def sweep_configs(args: argparse.Namespace) -> list:
    """The configs of a sweep command: every combination of the axes given
    (``--coverages``, ``--values``, ...) on the base config of ``--profile`` /
    ``--config`` / ``--set``. ``--profile scale`` without ``--config``: the scale plan
    (:func:`bindcore.controlled.recipes.scale_plan`) with the ``--set`` fields applied,
    and the axes given replace the plan's values of those fields while the others stay
    the plan's (``--seeds 3 4``: the whole plan at seeds 3 and 4; ``--values 10``: that
    size at the plan's coverages and seeds), each size at the plan's steps unless
    ``--set steps=`` says otherwise."""
    from bindcore.controlled.recipes import scale_plan, scale_split_seeds
    from bindcore.sweep import grid

    base = _config_from_args(args, plan_steps=False)
    axes = {k: v for k, v in (("coverage", args.coverages), ("n_values", args.values),
                              ("n_concepts", args.concepts), ("seed", args.seeds)) if v}
    if profile_of(args) != "scale" or args.config is not None:
        return [_plan_steps(args, c) for c in grid(base, **axes)]
    sets = _parse_sets(args.set)
    plan = [c.with_(**{k: getattr(base, k) for k in sets}) for c in scale_plan() if c.split_seed == 0]
    # each point of the plan with the axes' values (no axis: the point itself), at its point's
    # steps and on its point's object splits (unless --set names them); in the plan's order, each config once
    return list(dict.fromkeys(_plan_steps(args, s) for point in plan
                              for c in grid(point.with_(steps=base.steps), **axes)
                              for s in ([c] if "split_seed" in sets else
                                        [c.with_(split_seed=k) for k in scale_split_seeds(c.n_concepts, c.n_values,
                                                                                          c.coverage)])))


def sweep_executor(args: argparse.Namespace):
    """The executor of a sweep command, its options checked and, for Ray, connected:
    a missing Ray, an address with no cluster behind it or a GPU device without GPUs
    per run are refused before any work."""
    from bindcore.runner import LocalExecutor, RayExecutor, _import_ray

    ray_only = {"--address": args.address, "--cpus-per-run": args.cpus_per_run, "--gpus-per-run": args.gpus_per_run}
    if args.executor == "local":
        for option, value in ray_only.items():
            if value is not None:
                raise OptionError(option, "only with --executor ray")
        return LocalExecutor(args.workers)
    check_option("--executor", lambda _: _import_ray(), args.executor)
    gpus = args.gpus_per_run or 0.0
    if args.device and args.device.startswith("cuda") and not gpus:
        raise OptionError("--gpus-per-run", f"--device {args.device} with --executor ray needs --gpus-per-run > 0 "
                          "(Ray hides the GPUs from runs that ask for none)")
    executor = RayExecutor(address=args.address, cpus_per_run=args.cpus_per_run or 1.0, gpus_per_run=gpus,
                           workers=args.workers)
    check_option("--address", lambda _: executor.start(), args.address or "local instance")
    option = "--gpus-per-run" if gpus else "--cpus-per-run"
    check_option(option, lambda _: executor.check_resources(), getattr(args, option[2:].replace("-", "_")))
    return executor


def _run_sweep(args: argparse.Namespace) -> int:
    import time

    from bindcore.runner import SweepError
    from bindcore.runtime import set_threads
    from bindcore.store import ResultStore
    from bindcore.sweep import run_sweep

    try:
        _check_run_options(args, device_here=args.executor == "local")
        configs = sweep_configs(args)
        executor = sweep_executor(args)
        store = ResultStore(args.results)
    except (ValueError, FileNotFoundError) as exc:
        return _fail(args, exc)
    set_threads(args.threads)  # the runs trained in this process (--workers 1); worker processes use one each
    t0 = time.perf_counter()
    try:
        recs = run_sweep(configs, store=store, device=args.device, progress=not args.quiet, executor=executor,
                         stack=args.stack)
    except SweepError as exc:
        print(f"bindcore sweep: {exc}", file=sys.stderr)
        return 1
    if args.publish:
        store = ResultStore(args.results)
        for cfg in configs:
            entry = store.find(cfg.store_kind, cfg.to_dict())
            if entry is not None and entry.source == "local":
                try:
                    print(f"published {store.publish(entry)}")
                except ValueError as exc:
                    print(f"not published: {exc}", file=sys.stderr)
    for cfg, rec in zip(configs, recs):
        m = rec["metrics"]
        print(f"C={cfg.n_concepts} V={cfg.n_values} coverage={cfg.coverage:g} seed={cfg.seed}: "
              + " ".join(f"{k}={v:.3f}" for k, v in sorted(m.items()) if k.startswith("test_")))
    print(f"{len(recs)} runs in {time.perf_counter() - t0:.1f} s (executor {args.executor}; results in "
          f"{ResultStore(args.results).root})")
    return 0


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


def register_data(subparsers) -> None:
    p = subparsers.add_parser("data", help="make the book's datasets (CLEVR-2D, CLEVR-like 3-D, captions)")
    sub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    m = sub.add_parser("make", help="write a generated dataset with its labels.csv",
                       description="Write images (PNG), labels.csv in the authors' release layout, "
                       "metadata.json and captions.csv into --out.")
    m.add_argument("kind", choices=DATASETS)
    m.add_argument("--out", type=path_option, required=True,
                   help="output folder (created; a folder that is not empty is refused unless --overwrite)")
    m.add_argument("--overwrite", action="store_true",
                   help="replace the dataset files (labels.csv, metadata.json, captions.csv, images) in a folder "
                   "that is not empty; other files stay")
    m.add_argument("--force", action="store_true",
                   help="with --overwrite: also delete dataset files that bindcore did not write there (e.g. the "
                   "authors' images named by their labels.csv; they are listed)")
    m.add_argument("--size", type=positive_int, default=None, help="image width in pixels (default: the dataset's)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--scenes", type=positive_int, default=None,
                   help="number of scenes (three-object and text sample)")
    m.add_argument("--occlusion", action="store_true", help="three-object scenes with occlusion")
    m.add_argument("--jitter", type=float, default=0.0, help="CLEVR-2D position/size jitter")
    m.set_defaults(func=_run_data_make)


# the options of data make each dataset reads (any other given is refused, not ignored)
DATA_OPTIONS = {"--size": ("clevr2d", "clevr2d-singles", "clevr3d", "clevr3d-singles", "clevr3d-three"),
                "--scenes": ("clevr3d-three", "text"), "--occlusion": ("clevr3d-three",), "--jitter": ("clevr2d",),
                "--seed": ("clevr2d", "clevr3d", "clevr3d-three", "text")}


def check_data_options(args: argparse.Namespace) -> None:
    """An option of ``data make`` that the dataset does not read is refused in one line;
    so is an image size out of range."""
    given = {"--size": args.size is not None, "--scenes": args.scenes is not None, "--occlusion": args.occlusion,
             "--jitter": args.jitter != 0.0, "--seed": args.seed != 0}
    for option, kinds in DATA_OPTIONS.items():
        if given[option] and args.kind not in kinds:
            raise OptionError(option, f"{args.kind} does not read it (only {', '.join(kinds)})")
    if args.size is not None and not 16 <= args.size <= 4096:
        raise OptionError("--size", f"must lie in [16, 4096] pixels, got {args.size}")


def _run_data_make(args: argparse.Namespace) -> int:
    import time

    from bindcore.data.core import check_output_folder

    t0 = time.perf_counter()
    try:
        check_data_options(args)
        if args.force and not args.overwrite:
            raise OptionError("--force", "only with --overwrite")
        check_option("--out", lambda out: check_output_folder(out, args.overwrite, args.force), args.out)  # first
        ds = make_dataset(args.kind, size=args.size, seed=args.seed, n_scenes=args.scenes,
                          occlusion=args.occlusion, jitter=args.jitter)
    except ValueError as exc:
        return _fail(args, exc)
    out = ds.write(args.out, overwrite=args.overwrite, force=args.force)
    print(f"{args.kind}: {len(ds)} scenes ({ds.metadata()}) written to {out} in {time.perf_counter() - t0:.1f} s")
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


def register_publish(subparsers) -> None:
    p = subparsers.add_parser(
        "publish", help="copy a result store's finished records to published/, where a fresh build reuses them",
        description="Copy every finished record of the current versions of the kinds from a result store (e.g. "
        "the store of `bindcore book --recompute`, <build-dir>/recomputed-results) to published/: its config and "
        "result, which name the machine, the time and the commit that made it.")
    p.add_argument("--results", type=path_option, default=None, help="result store root (default: results/)")
    p.add_argument("--kind", action="append", default=None, metavar="NAME",
                   help="only this kind of record (a folder of the store: train-2, train-pixels-1, approximators-1, "
                   "geometry-1, probes-1, embeddings); repeatable (default: all)")
    weights = p.add_mutually_exclusive_group()
    weights.add_argument("--weights", dest="weights", action="store_const", const="read", default=None,
                         help="also copy the weights that an analysis loaded from this store (e.g. the §5.2 models "
                         "that §4 embeds), where each file is small (larger ones are published without, and listed)")
    weights.add_argument("--all-weights", dest="weights", action="store_const", const="all",
                         help="also copy every record's weights, where each file is small")
    p.set_defaults(func=_run_publish)


def _run_publish(args: argparse.Namespace) -> int:
    from bindcore.store import ResultStore

    kinds = publishable_kinds()
    try:
        for name in args.kind or ():
            if name not in kinds:
                raise OptionError("--kind", f"{name!r} is not one of {', '.join(kinds)}")
        store = ResultStore(args.results)
        if not store.root.is_dir():
            raise OptionError("--results", f"{store.root} is not a folder")
        rows = store.publish_all([kinds[n] for n in (args.kind or kinds)], weights=args.weights)
    except ValueError as exc:
        return _fail(args, exc)
    for entry, dest, what in rows:
        print(f"{entry.kind}/{entry.path.name}: " + (f"published to {dest}, {what}" if dest else what))
    done = [r for r in rows if r[1] is not None]
    print(f"{len(done)} of {len(rows)} records of {store.root} published to {store.published}")
    return 0


REGISTRARS: list[Callable[..., None]] = [register_book, register_sync, register_train, register_sweep, register_data, register_publish]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="bindcore",
        description="bindcore: the library behind the book 'How can embedding models bind concepts?'",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in REGISTRARS:
        register(subparsers)
    return parser


# failures of the disk, not of bindcore: one line, exit code 1 (state is clean: writes are atomic)
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (as Ctrl-C raises ``KeyboardInterrupt``) so that
    a command unwinds cleanly."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or an argparse error, already printed (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    main_thread = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    command = " ".join(x for x in (args.command, getattr(args, "data_command", None)) if x)
    try:
        return args.func(args)
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
