"""The parameters of each chapter on each profile. The ``quick`` values sit literally in a
notebook's papermill ``parameters`` cell (copied to ``notebooks/profiles/quick/`` by
``bindcore sync``); every other profile is a parameters file
``notebooks/profiles/<profile>/<notebook>.yaml`` (``papermill -f``), the dry run's cuts
in ``notebooks/profiles/dry-run/``. :func:`read_profile` is the one reader of these files, and
:func:`check_parameters` the one typed check of a chapter's values (:data:`TYPES`, pydantic):
a value is read as its type or refused, naming it, before any kernel starts."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from .runtime import PROFILES, check_profile
from .settings import check, typed, unknown_name

SCENES = 10**7  # scenes, edits, epochs and steps: far above any profile's, below what fails in an allocation
PIXELS = 4096


def _list(item: Any, low: int = 1, high: int | None = None) -> Any:
    return Annotated[list[item], Field(min_length=low, max_length=high)]


_COUNT = typed(int, ge=1, le=SCENES)
_FRACTION = typed(float, gt=0, lt=1)
_POSITIVE = typed(float, gt=0)
_FOLDER = typed(str) | None
# the declared type and range of every name of every chapter's parameters cell
TYPES: dict[str, Any] = {
    "profile": typed(Literal[PROFILES]),
    "n_sample_scenes": _COUNT,
    "values_for_baseline": _list(typed(int, ge=2, le=1000)),
    "clevr3d_width": typed(int, ge=8, le=PIXELS),  # pixels; the height is 3/4 of it
    "three_object_scenes": typed(int, ge=2, le=10**6),
    "retrieval_scenes": typed(int, ge=1, le=10**6) | None,  # None: all 576
    "text_space": _list(typed(int, ge=1, le=20), 2, 2),  # [adjectives, nouns]
    "fractions": _list(_FRACTION),
    "widths": _list(typed(int, ge=1, le=2**16)),
    "probe_epochs": _COUNT,
    "probe_lr": _POSITIVE,
    "steps": _COUNT | None,
    "batch_size": typed(int, ge=1, le=2**20) | None,  # None: full batch
    "lrs": _list(_POSITIVE),
    "patience": typed(int, ge=1, le=1000) | None,  # None: every approximator runs all its steps
    "tree_grid": typed(Literal["small", "full"]),
    "max_objects": typed(int, ge=1, le=10**4),
    "clevr2d_size": typed(int, ge=16, le=PIXELS),
    "image_scenes": typed(int, ge=1, le=10**6) | None,  # None: all 576
    "ks": _list(typed(float)),
    "max_edits": _COUNT,
    "controlled": typed(bool),
    "controlled_objects": typed(int, ge=2, le=10**4),
    "mds_components": typed(int, ge=2, le=100),  # the pictures show the first two
    "sizes": _list(_list(typed(int, ge=1, le=10**4), 2, 2)),  # [C, V] pairs
    "coverages": _list(_FRACTION),
    "seeds": _list(typed(int, gt=-(2**40), lt=2**40)),
    "ablations": typed(bool),
    "show_scale": typed(bool),  # show the scale sweep's stored records (published/)
    "levels": _list(typed(Literal["clean", "speckle", "overlap"])),
    "approx_steps": _COUNT,
    "renders": typed(int, ge=1, le=1000),  # renderings averaged per scene
    "permutations": typed(int, ge=1, le=10**4),  # derangements per permuted-ID control
    "tree_components": _list(typed(int, ge=1, le=2**16) | None),  # None: all components
    "clevr_dir": _FOLDER, "pug_dir": _FOLDER, "release_folder": _FOLDER, "pug_folder": _FOLDER,
    "clevr_folder": _FOLDER,
    "dinov2": typed(str) | None,  # a DINOv2 model, e.g. facebook/dinov2-base; None: not run
    "natural_types": typed(int, ge=1, le=5),
    "natural_patterns": typed(int, ge=1, le=5),
    "natural_width": typed(int, ge=16, le=PIXELS),
    # the §5.2 models analysed: the §5.2 chapter's own, the scale sweep's that bind and fit, or of
    # those per size the point chosen on validation objects
    "models": typed(Literal["chapter", "scale", "scale-chosen"]),
    "controlled_steps": _COUNT | None,  # None: the profile's recipe
    "eval_scenes": typed(int, ge=1, le=2**22) | None,
    "train_batch": typed(int, ge=1, le=2**20) | None,
    "controlled_eval_scenes": typed(int, ge=1, le=2**22) | None,
    # how a chapter runs, not what it computes: settable, not part of a profile
    "workers": typed(int, ge=1, le=4096) | None,
    "stack": typed(int, ge=1, le=1024),
    "device": typed(str) | None,
    "executor": typed(str) | None,
    "n_concepts": typed(int, ge=1, le=16), "n_values": typed(int, ge=2, le=1000), "coverage": _FRACTION,
    "seed": typed(int, gt=-(2**40), lt=2**40),
}
# where a chapter reads a name differently from TYPES
CHAPTER_TYPES: dict[tuple[str, str], Any] = {
    ("geometry", "clevr3d_width"): typed(int, ge=0, le=PIXELS),  # 0: no 3-D renders
}

# each chapter notebook's chapter (the name its start_chapter passes; the report reads it)
NOTEBOOK_TABLES: dict[str, str] = {
    "03_formalisation": "formalisation", "c1_datasets": "datasets", "04_1_geometry": "geometry",
    "04_2_component_attribution": "geometry", "05_1_pretrained_binding_complexity": "pretrained_complexity",
    "05_2_binding_generalization": "binding_generalization",
    "05_3_binding_function_complexity": "controlled_complexity",
    "05_4_functional_form": "controlled_complexity", "d_additional": "additional", "e_pixel_encoders": "pixel_encoders",
}

# the notebook whose profile files :func:`chapter_parameters` reads for a chapter: the first of
# NOTEBOOK_TABLES (05_4 has 05_3's parameters; 04_2 has 04_1's but ks and max_edits, as it does no
# editing; tests/test_profiles.py checks that notebooks of one chapter agree)
CHAPTER_NOTEBOOKS: dict[str, str] = {chapter: nb for nb, chapter in reversed(NOTEBOOK_TABLES.items())}

DRY_RUN_FOLDER = "dry-run"  # notebooks/profiles/dry-run/: the paper-path dry run's cuts
PARAMETERS_CELL = 'tags=["parameters"]'  # how the parameters cell of a py:percent notebook is marked


@cache
def profiles_root(package_dir: Path | None = None) -> Path:
    """The folder of profile files: ``notebooks/profiles`` of the checkout bindcore runs
    from, else the copy a pip install puts inside the package (``bindcore/profiles``)."""
    package_dir = package_dir or Path(__file__).resolve().parent
    checkout = package_dir.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "notebooks" / "profiles").is_dir():
        return checkout / "notebooks" / "profiles"
    return package_dir / "profiles"


def profile_file(notebook: str, profile: str, root: Path | None = None) -> Path:
    """``notebooks/profiles/<profile>/<notebook>.yaml`` (``profile``: one of
    :data:`~bindcore.runtime.PROFILES`, or :data:`DRY_RUN_FOLDER`)."""
    if profile != DRY_RUN_FOLDER:
        check_profile(profile)
    return (root / "notebooks" / "profiles" if root is not None else profiles_root()) / profile / f"{notebook}.yaml"


def run_command(notebook: str, args: str = "", profile: str | None = None) -> str:
    """The papermill command that runs ``notebook`` (on ``profile``'s file, with ``args``), as inline code."""
    file = f" -f notebooks/profiles/{profile}/{notebook}.yaml" if profile else ""
    return f"`papermill notebooks/{notebook}.ipynb out.ipynb{file}{' ' + args if args else ''}`"


def check_parameters(chapter: str | None, values: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """``values`` of ``chapter``'s parameters, each read as its declared type (:data:`TYPES`), or
    a ``ValueError`` in one line naming the parameter and its rule (``where``: e.g. the file)."""
    out = {}
    for name, value in values.items():
        if name not in TYPES:
            raise unknown_name(name, TYPES, "parameter", f" of chapter {chapter!r}" if chapter else "")
        try:
            out[name] = check(CHAPTER_TYPES.get((chapter, name), TYPES[name]), value, name)
        except ValueError as exc:
            hint = " (papermill passes a list with -y 'name: [...]'; -p gives text)" if isinstance(value, str) and (
                str(exc).endswith("must be a valid list")) else ""
            raise ValueError(f"{where}{f'chapter {chapter!r}, ' if chapter else ''}parameter {exc}{hint}") from None
    return out


@cache
def _read(path: Path, mtime_ns: int) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{path}{line}: not YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(data, dict) and data is not None:
        raise ValueError(f"{path}: a papermill parameters file holds a mapping of names to values")
    return data or {}


def read_profile(notebook: str, profile: str, root: Path | None = None) -> dict[str, Any]:
    """The papermill parameters of ``notebook`` in its ``profile`` file (a copy, as ``papermill -f``
    reads them: ``profile`` included, except in a dry run's), each checked: a name of the notebook's
    parameters cell (where its source is here, else one with a declared type) of its declared type,
    and ``profile`` the folder's. Every failure is one ``ValueError`` naming the file."""
    import copy

    path = profile_file(notebook, profile, root)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise FileNotFoundError(f"no parameters file {path} (notebooks with one: {known})")
    params = copy.deepcopy(_read(path, path.stat().st_mtime_ns))
    if params.get("profile") != (None if profile == DRY_RUN_FOLDER else profile):
        raise ValueError(f"{path}: says profile {params.get('profile')!r}, not {profile!r}")
    check_names(notebook, params, root, f"{path}: ")
    return params


def check_names(notebook: str, params: Mapping[str, Any], root: Path | None = None, where: str = "") -> None:
    """A ``ValueError`` (starting with ``where``) unless every name of ``params`` is one of ``notebook``'s
    parameters cell (where its source is here) and every value of its declared type: what papermill
    writes into a kernel as ``NAME = VALUE``."""
    names = cell_names(notebook, root)
    for name in params:
        if names is not None and name not in names:
            raise ValueError(where + str(unknown_name(name, names, "parameter", f" of notebooks/{notebook}.py "
                                                      "(a name of its parameters cell)")))
    check_parameters(NOTEBOOK_TABLES.get(notebook), params, where)


def cell_names(notebook: str, root: Path | None = None) -> list[str] | None:
    """The names of ``notebook``'s parameters cell, in order; None where its source is not here
    (an installed package)."""
    source = (root or profiles_root().parents[1]) / "notebooks" / f"{notebook}.py"
    return list(_cell(source, source.stat().st_mtime_ns)) if source.is_file() else None


@cache
def _cell(source: Path, mtime_ns: int) -> dict[str, Any]:
    return parameters_cell(source.read_text(encoding="utf-8"))


def notebook_parameters(notebook: str, profile: str, root: Path | None = None) -> dict[str, Any]:
    """The parameters of ``notebook`` on ``profile`` (its file), each as its declared type,
    ``profile`` last."""
    params = read_profile(notebook, profile, root)
    del params["profile"]
    return {**check_parameters(NOTEBOOK_TABLES.get(notebook), params), "profile": profile}


def dry_run_parameters(root: Path | None = None) -> dict[str, dict[str, Any]]:
    """{notebook: the dry run's papermill parameters} (``notebooks/profiles/dry-run/``):
    every loop count, step count and data size of a chapter cut to seconds on a CPU, read
    on top of the paper profile's parameters by ``bindcore book --profile paper
    --dry-run`` (``tests/test_dry_run.py``), so that each branch the paper profile takes
    (its model sizes and recipes, protocols, sweeps, tables, figures, the report) runs.
    Data sizes are about the smoke profile's; the §5.2 models the other chapters use
    train for 2 steps, as 05_2's dry run trains them (shared in the store)."""
    folder = profile_file("x", DRY_RUN_FOLDER, root).parent
    return {p.stem: read_profile(p.stem, DRY_RUN_FOLDER, root) for p in sorted(folder.glob("*.yaml"))}


def _chapter_notebook(chapter: str) -> str:
    if chapter not in CHAPTER_NOTEBOOKS:
        raise unknown_name(chapter, CHAPTER_NOTEBOOKS, "chapter")
    return CHAPTER_NOTEBOOKS[chapter]


def parameter_names(chapter: str) -> list[str]:
    """The parameters of ``chapter`` (besides ``profile``), in its profile files' order."""
    return [k for k in notebook_parameters(_chapter_notebook(chapter), "quick") if k != "profile"]


def profile_tables() -> dict[str, dict[str, dict[str, Any]]]:
    """{chapter: {profile: its parameters without ``profile``}}: every profile file of
    every chapter, read and checked."""
    return {chapter: {p: {k: v for k, v in notebook_parameters(nb, p).items() if k != "profile"} for p in PROFILES}
            for chapter, nb in CHAPTER_NOTEBOOKS.items()}


def chapter_parameters(chapter: str, profile: str, **given: Any) -> dict[str, Any]:
    """The parameters of ``chapter`` on ``profile`` (its profile file) with every
    non-None ``given`` value on top, each checked against its declared type (:data:`TYPES`)."""
    params = notebook_parameters(_chapter_notebook(chapter), profile)
    for name in given:
        if name not in params or name == "profile":
            raise unknown_name(name, [k for k in params if k != "profile"], "parameter", f" of chapter {chapter!r}")
    params.update(check_parameters(chapter, {k: v for k, v in given.items() if v is not None}))
    params["profile"] = params.pop("profile")  # last, as a run records it
    return params


# ---------------------------------------------------------------------------------
# the quick profile: the parameters cells
# ---------------------------------------------------------------------------------
def parameters_cell(source: str) -> dict[str, Any]:
    """{name: value} of the ``parameters`` cell of a jupytext py:percent notebook
    (``source``), every top-level assignment read as a Python literal; a ``ValueError``
    when there is no such cell or a value is not a literal."""
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("# %%") and PARAMETERS_CELL in line), None)
    if start is None:
        raise ValueError("no cell tagged parameters")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("# %%")), len(lines))
    out: dict[str, Any] = {}
    for node in ast.parse("\n".join(lines[start + 1:end])).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ValueError(f"line {start + 1 + node.lineno}: a parameters cell holds plain assignments")
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise ValueError(f"line {start + 1 + node.lineno}: {node.targets[0].id} is not a literal value") from None
    return out
