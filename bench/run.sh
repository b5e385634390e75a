#!/usr/bin/env bash
# npm run bench [-- OPTIONS]: builds what the benchmark measures (native CLI, WASM module, page),
# installs its own dependencies (bench/package.json: onnxruntime-web), then runs bench/run.mjs,
# which prints every table. OPTIONS go to bench/run.mjs (e.g. --quick, --target, --draft,
# --skip browser). The machine should be otherwise idle: figures are wall-clock medians.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(( $(nproc) < 2 ? 1 : 2 ))
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" --target specdec
npm run build
npm run build:page >/dev/null
npm ci --prefix bench --no-audit --no-fund >/dev/null
exec node bench/run.mjs "$@"
