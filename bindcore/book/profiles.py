"""The parameters of each chapter on each profile. The ``quick`` values sit literally in a
notebook's papermill ``parameters`` cell (copied to ``notebooks/profiles/quick/`` by
``bindcore sync``); every other profile is a parameters file
``notebooks/profiles/<profile>/<notebook>.yaml`` (``papermill -f``), the dry run's cuts
in ``notebooks/profiles/dry-run/``. Every parameter has a rule (:data:`RULES`): a value
is read as its type or refused, naming it, before the chapter does any work."""

from __future__ import annotations

import ast
import copy
from functools import cache
from pathlib import Path
from typing import Any

from bindcore.data.pixels import LEVELS
from bindcore.runtime import PROFILES, check_profile
from bindcore.settings import Rule, unknown_name

_FRACTION = Rule(float, low=0, high=1, open_low=True, open_high=True)
_POSITIVE = Rule(float, low=0, open_low=True)
RULES: dict[str, Rule] = {
    "n_sample_scenes": Rule(int, low=1),
    "values_for_baseline": Rule(list, item=Rule(int, low=2)),
    "clevr3d_width": Rule(int, low=8, note="pixels; the height is 3/4 of it"),
    "three_object_scenes": Rule(int, low=2),
    "retrieval_scenes": Rule(int, low=1, optional=True, note="None: all 576"),
    "text_space": Rule(list, item=Rule(int, low=1, high=20), min_items=2, max_items=2, note="[adjectives, nouns]"),
    "fractions": Rule(list, item=_FRACTION),
    "widths": Rule(list, item=Rule(int, low=1)),
    "probe_epochs": Rule(int, low=1),
    "probe_lr": _POSITIVE,
    "steps": Rule(int, low=1, optional=True),
    "batch_size": Rule(int, low=1, optional=True, note="None: full batch"),
    "lrs": Rule(list, item=_POSITIVE),
    "tree_grid": Rule(str, choices=("small", "full")),
    "max_objects": Rule(int, low=2),
    "clevr2d_size": Rule(int, low=16, note="pixels"),
    "image_scenes": Rule(int, low=1, optional=True, note="None: all 576"),
    "ks": Rule(list, item=Rule(float)),
    "max_edits": Rule(int, low=1),
    "controlled": Rule(bool),
    "controlled_objects": Rule(int, low=2),
    "mds_components": Rule(int, low=2, note="the pictures show the first two"),
    "sizes": Rule(list, item=Rule(list, item=Rule(int, low=1), min_items=2, max_items=2), note="[C, V] pairs"),
    "coverages": Rule(list, item=_FRACTION),
    "seeds": Rule(list, item=Rule(int, low=-(2**40) + 1, high=2**40 - 1)),
    "ablations": Rule(bool),
    "show_scale": Rule(bool, note="show the scale sweep's stored records (published/)"),
    "levels": Rule(list, item=Rule(str, choices=LEVELS)),
    "approx_steps": Rule(int, low=1),
    "renders": Rule(int, low=1, note="renderings averaged per scene"),
    "permutations": Rule(int, low=1, note="derangements per permuted-ID control"),
    "tree_components": Rule(list, item=Rule(int, low=1, optional=True), note="None: all components"),
    "clevr_dir": Rule(str, optional=True, note="the authors' CLEVR folder; None: not given"),
    "pug_dir": Rule(str, optional=True, note="the authors' PUG:SPARE folder; None: not given"),
    "dinov2": Rule(str, optional=True, note="a DINOv2 model, e.g. facebook/dinov2-base; None: not run"),
    "natural_types": Rule(int, low=1, high=5),
    "natural_patterns": Rule(int, low=1, high=5),
    "natural_width": Rule(int, low=16, note="pixels; the height is 3/4 of it"),
    "models": Rule(str, choices=("chapter", "scale", "scale-chosen"),
                   note="the §5.2 models analysed: 'chapter', the §5.2 chapter's own (largest coverage, first seed); "
                   "'scale', the scale sweep's models that bind on validation objects and fitted their training task, "
                   "with published weights; "
                   "'scale-chosen', of those, per size the point chosen on validation objects"),
    "controlled_steps": Rule(int, low=1, optional=True,
                             note="training steps of the §5.2 models the chapter uses; None: the profile's recipe"),
    "eval_scenes": Rule(int, low=1, optional=True,
                        note="held-out scenes per evaluation of each training run; None: the profile's recipe"),
    "train_batch": Rule(int, low=1, optional=True, note="scenes per training batch of each run; None: the recipe's"),
    "controlled_eval_scenes": Rule(int, low=1, optional=True,
                                   note="eval_scenes of the §5.2 models the chapter uses; None: the profile's recipe"),
}
# where a chapter reads a parameter differently from RULES
CHAPTER_RULES: dict[tuple[str, str], Rule] = {
    ("geometry", "clevr3d_width"): Rule(int, low=0, note="pixels, >= 8; 0: no 3-D renders"),
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


def profiles_root(package_dir: Path | None = None) -> Path:
    """The folder of profile files: ``notebooks/profiles`` of the checkout bindcore runs
    from, else the copy a pip install puts inside the package (``bindcore/profiles``)."""
    package_dir = package_dir or Path(__file__).resolve().parents[1]
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


@cache
def _read_yaml(path: Path, mtime_ns: int) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a papermill parameters file holds a mapping of names to values")
    return data


def read_profile_file(notebook: str, profile: str, root: Path | None = None) -> dict[str, Any]:
    """The papermill parameters of ``notebook`` on ``profile`` (a copy; ``profile``
    included), as its file holds them."""
    path = profile_file(notebook, profile, root)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise FileNotFoundError(f"no parameters file {path} (notebooks with one: {known})")
    return copy.deepcopy(_read_yaml(path, path.stat().st_mtime_ns))


def notebook_parameters(notebook: str, profile: str, root: Path | None = None) -> dict[str, Any]:
    """The parameters of ``notebook`` on ``profile`` (``profile`` last), each checked
    against its rule; a file that names another profile than its folder is refused."""
    params = read_profile_file(notebook, profile, root)
    named = params.pop("profile", None)
    if named != profile:
        raise ValueError(f"{profile_file(notebook, profile, root)}: says profile {named!r}, not {profile!r}")
    chapter = NOTEBOOK_TABLES.get(notebook)
    if chapter is None and params:
        raise ValueError(f"notebook {notebook!r} has no chapter parameters, its {profile} file names {sorted(params)}")
    out = {k: check_parameter(chapter, k, v) for k, v in params.items()}
    out["profile"] = profile
    return out


def dry_run_parameters(root: Path | None = None) -> dict[str, dict[str, Any]]:
    """{notebook: the dry run's papermill parameters} (``notebooks/profiles/dry-run/``):
    every loop count, step count and data size of a chapter cut to seconds on a CPU, read
    on top of the paper profile's parameters by ``bindcore book --profile paper
    --dry-run`` (``tests/test_dry_run.py``), so that each branch the paper profile takes
    (its model sizes and recipes, protocols, sweeps, tables, figures, the report) runs.
    Data sizes are about the smoke profile's; the §5.2 models the other chapters use
    train for 2 steps, as 05_2's dry run trains them (shared in the store)."""
    folder = profile_file("x", DRY_RUN_FOLDER, root).parent
    return {p.stem: read_profile_file(p.stem, DRY_RUN_FOLDER, root) for p in sorted(folder.glob("*.yaml"))}


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


def paper_differences(chapter: str, params: dict[str, Any]) -> list[str]:
    """Each parameter of a run of ``chapter`` (``params``) that differs from the paper
    profile's, as "name: this run's (paper: the paper profile's)": what a cheaper
    profile or an override reduces or changes."""
    paper = chapter_parameters(chapter, "paper")
    return [f"{k}: {params[k]!r} (paper: {v!r})" for k, v in paper.items()
            if k != "profile" and k in params and params[k] != v]


def parameter_rule(chapter: str, name: str) -> Rule:
    """The declared type and range of ``chapter``'s parameter ``name``."""
    if name not in RULES:
        raise unknown_name(name, RULES, "parameter")
    return CHAPTER_RULES.get((chapter, name), RULES[name])


def check_parameter(chapter: str, name: str, value: Any) -> Any:
    """``value`` as ``chapter``'s parameter ``name`` (parsed as its declared type), or a
    ``ValueError`` naming the parameter and its rule."""
    try:
        return parameter_rule(chapter, name).check(value, name)
    except ValueError as exc:
        raise ValueError(f"chapter {chapter!r}, parameter {exc}") from None


def chapter_parameters(chapter: str, profile: str, **given: Any) -> dict[str, Any]:
    """The parameters of ``chapter`` on ``profile`` (its profile file) with every
    non-None ``given`` value on top, each checked against its rule (:data:`RULES`)."""
    params = notebook_parameters(_chapter_notebook(chapter), profile)
    for name in given:
        if name not in params or name == "profile":
            raise unknown_name(name, [k for k in params if k != "profile"], "parameter", f" of chapter {chapter!r}")
    params.update({k: check_parameter(chapter, k, v) for k, v in given.items() if v is not None})
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


def quick_file_text(notebook: str, root: Path) -> str:
    """``notebooks/profiles/quick/<notebook>.yaml`` as :func:`write_quick_files` writes it:
    the values of the notebook's parameters cell for the names its smoke file has."""
    import yaml

    cell = parameters_cell((root / "notebooks" / f"{notebook}.py").read_text(encoding="utf-8"))
    names = list(read_profile_file(notebook, "smoke", root))
    missing = [k for k in names if k not in cell]
    if missing:
        raise ValueError(f"notebooks/{notebook}.py: its parameters cell lacks {missing} (its profile files have them)")
    data = {"profile": "quick", **{k: cell[k] for k in names if k != "profile"}}
    return (f"# The quick profile of notebooks/{notebook}.py: its parameters cell, copied by `bindcore sync`\n"
            "# (edit the cell, not this file).\n"
            + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110))


def write_quick_files(root: Path, notebooks: list[str], check: bool = False) -> list[Path]:
    """Write ``notebooks/profiles/quick/<notebook>.yaml`` from each notebook's parameters
    cell (``bindcore sync``); the files that changed (with ``check=True``: those out of
    date, nothing written)."""
    from bindcore.io import atomic_write_bytes

    changed = []
    for nb in notebooks:
        path = profile_file(nb, "quick", root)
        text = quick_file_text(nb, root)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            changed.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(path, text.encode("utf-8"))
    return changed
