#!/usr/bin/env bash
# The prepared device check of §5.2: on a lent CUDA machine, the paper recipe's grid
# (|O| = 2,500 at coverages 0.1-0.9 first, then |O| = 400 and 100) within a 9-minute
# budget, records and a summary (machine, device, time) written to $OUT for publishing
# (copy $OUT/published/train-2/* to published/train-2/). Run from the repository root:
#   bash benchmarks/device_sweep.sh                # on the device machine
#   bash benchmarks/device_sweep.sh --device cpu --set steps=4 --set eval_scenes=16 --values 4 --coverages 0.5
# Extra arguments go to benchmarks/device_sweep.py (see its --help).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# a machine without the project's environment but with torch (a lent GPU machine): its python3
if [ ! -x "$PY" ] && python3 -c "import torch" 2>/dev/null; then PY=$(command -v python3); fi
if [ ! -x "$PY" ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q torch==2.14.1 torchvision==0.29.1
  .venv/bin/python -m pip install -q -e .
  PY=.venv/bin/python
fi
OUT=${OUT:-device-out}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
exec "$PY" benchmarks/device_sweep.py --out "$OUT" "$@"
