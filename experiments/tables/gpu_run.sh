#!/usr/bin/env bash
# GPU run of the experiment module: the training benchmark and the `paper` profile, in under 8 minutes on
# one H200. Needs only this repository and a Python with torch (+ numpy, sympy: torch's own dependencies);
# nothing is installed. matplotlib and tqdm are used when present (plots, progress), skipped otherwise.
#
#   experiments/tables/gpu_run.sh OUTDIR
#
# Writes under OUTDIR: env.txt, nvidia-smi.txt, train_bench.txt, paper.sqlite (every run, resumable),
# paper_report.json, paper_report.md, paper_report.txt, paper_plots/*.png, run.log.
# Time plan (hard limits by `timeout`, so the whole script stays under 8 minutes even if a step is slow):
# benchmark <= 60 s, paper profile <= 330 s (an interrupted profile keeps every finished run; rerunning
# this script resumes it), two reports <= 30 s each: at most 7.5 minutes in all.
set -euo pipefail

OUT="${1:?usage: experiments/tables/gpu_run.sh OUTDIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"   # the repo in place: no pip install
export PYTHONUNBUFFERED=1
START=$(date +%s)

python - <<'EOF' | tee "$OUT/env.txt"
import platform, os, torch, numpy, sympy
assert torch.cuda.is_available(), "experiments/tables/gpu_run.sh needs a CUDA device"
print("python", platform.python_version(), "torch", torch.__version__, "numpy", numpy.__version__,
      "sympy", sympy.__version__)
print("device", torch.cuda.get_device_name(0), "cpus", os.cpu_count())
EOF
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true

PLOTS=(--plots "$OUT/paper_plots")
python -c "import matplotlib" 2>/dev/null || PLOTS=(--no-plots)
# 16 CPU cores on the H200 machine: 4 job processes share the GPU (each is launch-bound, so they overlap;
# more do not help, the GPU is then busy), and a job whose labels are slow (only the O(T^3) triangle center
# at T >= 32) spreads them over the remaining cores.
CPUS=$(nproc)
WORKERS=$(( CPUS >= 8 ? 4 : 2 ))
LABELERS=$(( CPUS - WORKERS - 2 > 1 ? CPUS - WORKERS - 2 : 1 ))

echo "== train_bench ($(date -u +%T))" | tee -a "$OUT/run.log"
timeout 60 python benchmarks/train_bench.py --device cuda 2>&1 | tee "$OUT/train_bench.txt" || \
    echo "train_bench: exit $? (timeout 60 s)" | tee -a "$OUT/run.log"

echo "== paper profile, $WORKERS workers x $LABELERS labelers ($(date -u +%T))" | tee -a "$OUT/run.log"
timeout 330 python -m experiments run --profile paper --results "$OUT" --device cuda --quiet \
    --workers "$WORKERS" --label-workers "$LABELERS" 2>&1 | tee -a "$OUT/run.log" || \
    echo "paper profile: exit $? (timeout 330 s; finished runs are kept, rerun to resume)" | tee -a "$OUT/run.log"

echo "== report ($(date -u +%T))" | tee -a "$OUT/run.log"
timeout 30 python -m experiments report --profile paper --results "$OUT" --no-plots --json \
    > "$OUT/paper_report.json" || echo "report --json failed: $?" | tee -a "$OUT/run.log"
timeout 30 python -m experiments report --profile paper --results "$OUT" "${PLOTS[@]}" \
    --markdown "$OUT/paper_report.md" > "$OUT/paper_report.txt" 2>&1 || echo "report failed: $?" | tee -a "$OUT/run.log"
echo "== done in $(( $(date +%s) - START )) s" | tee -a "$OUT/run.log"
