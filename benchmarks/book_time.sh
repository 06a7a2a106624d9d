#!/usr/bin/env bash
# The quick book's cost as issue-style measurements, from fresh clones of this repository
# (run it on idle cores: anything else on the machine is in the numbers):
#   1. `make book` on a fresh clone (published records reused, everything else computed),
#   2. `make book` again in the same clone (everything cached),
#   3. `make book RECOMPUTE=1` on another fresh clone (every number computed from scratch),
# then the per-chapter table of the three (benchmarks/book_times.py). Each build's
# build-times.json is copied to $OUT (default: ./book-times).
# Usage: bash benchmarks/book_time.sh [PROFILE]   (default quick)
#   FROM_SCRATCH=0 bash benchmarks/book_time.sh   leaves out the from-scratch build (hours on one core)
set -euo pipefail
PROFILE="${1:-quick}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$PWD/book-times}"
WORK="$(mktemp -d)"
mkdir -p "$OUT"
build() {  # build NAME CLONE [make arguments...]
  local name="$1" clone="$2"; shift 2
  local t0=$SECONDS
  make -C "$clone" book PROFILE="$PROFILE" "$@" > "$OUT/$name.log" 2>&1
  cp "$clone/_build/html/build-times.json" "$OUT/$name.json"
  echo "$name: $((SECONDS - t0)) s wall with the install (log: $OUT/$name.log)"
}
git clone -q "$REPO" "$WORK/a"
build first "$WORK/a"
build second "$WORK/a"
builds=(first="$OUT/first.json" second="$OUT/second.json")
if [ "${FROM_SCRATCH:-1}" != 0 ]; then
  git clone -q "$REPO" "$WORK/b"
  build recompute "$WORK/b" RECOMPUTE=1
  builds+=(recompute="$OUT/recompute.json")
fi
"$WORK/a/.venv/bin/python" "$REPO/benchmarks/book_times.py" --slowest "${builds[@]}" | tee "$OUT/table.txt"
rm -rf "$WORK"
