"""The product families' initialisation: ours (``one_plus``, factors ``1 + 0.1 N(0, 1)``,
the output bias net of the units' expected constant part) against the release's
(``normal``, factors ``N(0, 1)``), printed (not asserted).

For the within-object and the global product, on a synthetic global-product binding
function (5 x 5 values, d = 32) and, where the MiniLM text encoder runs, on its
embeddings of the two-object captions of 5 x 5 adjectives and nouns (linear probes
fitted on 40 % of the captions), 60 % of the objects for fitting: R² and object
recognition on the training scenes and on the held-out scenes, at the final step and at
the step chosen on validation scenes, under the release's protocol (full batch, 4,000
steps, Adam at a constant lr 1e-2) and the quick book's (batches of 512, 1,000 steps).

Usage: ``python benchmarks/approximator_inits.py [--protocols release quick]
[--no-text] [--threads 1]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402

import bindcore  # noqa: E402,F401  (its OpenMP policy, before torch loads)
from bindcore.analysis import approximators as A  # noqa: E402
from bindcore.analysis.probes import object_level_split  # noqa: E402
from bindcore.runtime import set_threads  # noqa: E402

PROTOCOLS = {"release": A.get_protocol("release"),
             "quick": A.get_protocol("paper", steps=1000, lrs=[1e-2], batch_size=512, eval_every=100)}


def datasets(text: bool) -> dict:
    out = {"synthetic global product 5x5": A.synthetic_binding_data((5, 5), dim=32, kind="product", seed=0)}
    if text:
        from bindcore.analysis.embedding_sets import pretrained_binding
        from bindcore.encoders import EncoderUnavailable, SentenceTransformerEncoder

        enc = SentenceTransformerEncoder()
        try:
            enc.check_available()
            out["MiniLM captions 5x5"] = pretrained_binding(
                {"text_space": [5, 5], "probe_epochs": 500, "probe_lr": 0.1}, {enc.name: enc})[0][enc.name]
        except (EncoderUnavailable, ImportError) as e:
            print(f"MiniLM not available ({e}); synthetic data only")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    ap.add_argument("--no-text", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    set_threads(args.threads)
    rows = []
    for dname, data in datasets(not args.no_text).items():
        split = object_level_split(data, 0.6)
        for pname in args.protocols:
            proto = PROTOCOLS[pname]
            for fam in ("within_object_product", "global_product"):
                for init in ("one_plus", "normal"):
                    specs = A.make_specs(data, split, fam, None, proto.lrs, (0,), 0.2, 0, 0.6, product_init=init)
                    r = A.train_models(data, specs, proto, progress=False)[0]
                    rows.append({"data": dname, "protocol": pname, "family": fam, "init": init,
                                 **{f"{w} {k}": r[f"{w}_{k}"] for w in ("final", "selected")
                                    for k in ("train_r2", "heldout_r2", "train_object", "heldout_object")}})
                    print(f"{dname} | {pname} | {fam} | {init}: done", flush=True)
    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
