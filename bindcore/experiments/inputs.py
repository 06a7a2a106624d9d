"""What the chapters embed with and read: the encoders of §4 and §5.1 (pretrained where
reachable, each beside its random-init control), the authors' image folders and DINOv2
where a reader has them, and the note that says on the page which of them run."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def geometry_encoders() -> tuple[dict[str, list[tuple[Any, bool]]], str]:
    """The encoders of the §4 chapters: ({"text": [(encoder, pretrained)], "image": [...]},
    note for the top of the page). Pretrained CLIP for both modalities where its weights
    are reachable, each with the random-init control beside it; otherwise MiniLM and the
    control for texts and only the control for images."""
    from bindcore import encoders

    d = encoders.default_encoders()
    if d.pretrained_clip:
        control = encoders.random_init_like(d.image, seed=0)
        return {"text": [(d.text, True), (control, False)], "image": [(d.image, True), (control, False)]}, d.note
    return {"text": [(d.text, True), (d.image, False)], "image": [(d.image, False)]}, d.note


def pretrained_encoders() -> tuple[dict[str, Any], str]:
    """The encoders of §5.1: pretrained CLIP's text tower where reachable, else the
    pretrained MiniLM text encoder; and CLIP's architecture with random weights, the
    paper's control. Returns ({name: encoder}, note for the top of the page)."""
    from bindcore import encoders

    d = encoders.default_encoders()
    control = encoders.RandomInitClipEncoder("ViT-B-32-quickgelu", seed=0)
    if d.pretrained_clip:
        return {d.text.name: d.text, "ViT-B/32 (random init)": control}, d.note  # the name says its model and tag
    return {"all-MiniLM-L6-v2 (pretrained text encoder)": d.text,
            "ViT-B/32 text tower (random init)": control}, d.note


# ---------------------------------------------------------------------------------
# the authors' data and DINOv2, where a reader has them
# ---------------------------------------------------------------------------------
# chapter parameter -> (load_folder kind, dataset name in the tables)
AUTHOR_FOLDERS = {"clevr_dir": ("clevr", "CLEVR (authors' images)"), "pug_dir": ("pug_spare", "PUG:SPARE")}
AUTHOR_DATA_HOW = ("The authors share their images outside their repository (the link is in the README of "
                   "oshapio/binding-concepts-complexity); a folder holds the images and a labels.csv in the release's "
                   "layout (bindcore.data.load_folder reads it).")


def authors_data(params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The authors' image folders a chapter was given (``clevr_dir``, ``pug_dir``) as
    datasets (:func:`bindcore.data.load_folder`), and one line per folder saying what
    was loaded, or that it was not given or not found and how to get it. Absence is
    decided by a directory check: nothing is downloaded or waited for."""
    from bindcore.data import load_folder

    out, notes = {}, []
    for key, (kind, name) in AUTHOR_FOLDERS.items():
        path = params.get(key)
        if not path:
            notes.append(f"{name}: not given (`{key}` is None).")
        elif not Path(path).is_dir():
            notes.append(f"{name}: folder {path} not found; nothing of it runs.")
        else:
            ds = load_folder(path, kind)
            out[name] = ds
            notes.append(f"{name}: {len(ds)} scenes loaded from {path}.")
    return out, notes


def dinov2_encoder(params: dict[str, Any]) -> tuple[Any | None, str]:
    """(the DINOv2 encoder named by the chapter parameter ``dinov2``, or None; a line
    saying which runs, or why not and how to get it). Decided without building the
    model: at most one 0.5 s probe of the Hugging Face Hub (none under HF_HUB_OFFLINE=1)."""
    from bindcore.encoders import DinoV2Encoder, EncoderUnavailable

    name = params.get("dinov2")
    if not name:
        return None, ("DINOv2: not asked for (`dinov2` is None). Pass `-p dinov2 facebook/dinov2-base` where its "
                      "weights download (e.g. Colab) or sit in the Hugging Face cache.")
    enc = DinoV2Encoder(name)
    try:
        enc.check_available()
    except (EncoderUnavailable, ImportError) as e:
        return None, f"DINOv2 ({name}): not run here. {e}"
    return enc, f"DINOv2 ({name}): runs on the image sets."


def data_and_weights_note(params: dict[str, Any], notebook: str, cells: str) -> tuple[dict[str, Any], Any, str]:
    """The authors' folders and DINOv2 of a chapter: (datasets, DINOv2 encoder or None,
    a markdown note for the page naming what runs, and for what does not, the cells
    that would run with it and the command that runs them)."""
    datasets, notes = authors_data(params)
    dino, dnote = dinov2_encoder(params)
    missing = [k for k, (_, name) in AUTHOR_FOLDERS.items() if name not in datasets] + ([] if dino else ["dinov2"])
    lines = ["**The authors' data and DINOv2 on this page.**", *(f"* {n}" for n in notes), f"* {dnote}"]
    if missing:
        args = " ".join(f"-p {k} {'facebook/dinov2-base' if k == 'dinov2' else '/path/to/folder'}" for k in missing)
        lines.append(f"\nWith them, {cells} also run on those data and that encoder: "
                     f"`papermill notebooks/{notebook}.ipynb out.ipynb {args}`. "
                     + (AUTHOR_DATA_HOW if any(k != "dinov2" for k in missing) else ""))
    return datasets, dino, "\n".join(lines)
