#!/usr/bin/env bash
# npm run bench [-- OPTIONS]: builds what the benchmark measures (native CLI, the shipped WASM
# module and the page, and the benchmark's own WASM module with the timing entry points:
# build-wasm/specdec-bench.*), then runs bench/run.mjs, which prints every table. OPTIONS go to
# bench/run.mjs (e.g. --quick, --target A[,B], --draft, --skip browser). Then bench/modes.mjs
# prints the decoding modes' tables (gamma auto / heuristic, prompt lookup, trees, heads) for
# both pairs (`--skip modes` leaves them out; `--quick` runs them with 1 repeat), and
# bench/ort-spec.mjs onnxruntime-web as specdec's target (`--skip ortspec` leaves it out), bench/threads.mjs
# the physics with 1..T threads (`--skip threads`), and bench/wllama.mjs specdec against llama.cpp's
# WASM build in Chromium at 1 and 2 threads (`--skip wllama`), bench/chromium-weights.mjs float32
# against 8-bit weights in a Chromium Worker (`--skip weights`), bench/transformers.mjs
# transformers.js as specdec's target against its own generate() (`--skip transformers`), and
# bench/gpu.mjs the GPT on WebGPU in Chromium with whatever adapter is there (here SwiftShader,
# a software adapter: labelled so; `--skip gpu`); bench/browser.mjs the page's verdict against the
# library in the same Chromium (`--skip page`); bench/load.mjs 1 and 2 threads under CPU hogs
# (`--skip load`); bench/families.mjs real checkpoint shapes loaded and run (`--skip families`);
# bench/families-transformers.mjs plain decoding against transformers.js generate() on the
# SmolLM2-360M shape's folder at 1 and 2 threads (`--skip tfjsplain`).
# The machine should be otherwise
# idle: figures are wall-clock medians.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(( $(nproc) < 2 ? 1 : 2 ))
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" --target specdec
npm run build
scripts/build-wasm --bench
npm run build:page >/dev/null
args=" $* "
run_args=()
for a in "$@"; do run_args+=("${a//,modes/}"); done
node bench/run.mjs "${run_args[@]}"
# part NAME QUICK FULL: runs the commands QUICK under --quick, FULL otherwise, and nothing when
# --skip names NAME.
part() {
  case "$args" in
    *" --skip "*"$1"*|*"--skip="*"$1"*) ;;
    *" --quick "*) eval "$2" ;;
    *) eval "$3" ;;
  esac
}
part modes 'node bench/modes.mjs --repeats 1' 'node bench/modes.mjs'
part ortspec 'node bench/ort-spec.mjs --repeats 1' 'node bench/ort-spec.mjs'
# Threads: the physics of a pass with 1..T threads, WASM (Node) and native, both pairs, float32
# and 8-bit weights (v(k), matmul ÷ roofline, plain and best-γ speculative; int8 ÷ f32 from the
# same run, WASM at T 0 / 0.8 with the two alternated in every repeat, native greedy); then
# onnxruntime-web at numThreads 1 and 2 against specdec at 1 and 2 threads.
part threads 'node bench/threads.mjs --quick --weights f32,int8; node bench/ort-threads.mjs --repeats 1' \
  'node bench/threads.mjs --weights f32,int8; node bench/ort-threads.mjs'
# The peer in one Chromium session: llama.cpp's WASM build (wllama) against specdec, 1 and 2 threads;
# then both on the same 8-bit weights (specdec int8 against llama.cpp's Q8_0 of the same blocks).
part wllama 'node bench/wllama.mjs --repeats 1; node bench/wllama.mjs --repeats 1 --weights int8' \
  'node bench/wllama.mjs; node bench/wllama.mjs --weights int8'
# float32 against 8-bit weights in one Chromium (a module Worker): both pairs, 1 and 2 threads,
# plain and best-γ speculative, f32 and int8 alternated in every repeat; int8 ÷ f32 per cell.
part weights 'node bench/chromium-weights.mjs --repeats 1 --gammas 3,4' 'node bench/chromium-weights.mjs'
# transformers.js as the target (specdec/transformers), fp32 and fp16, against its generate().
part transformers 'node bench/transformers.mjs --repeats 1' 'node bench/transformers.mjs; node bench/transformers.mjs --dtype fp16'
# The page held to the library (issue 29): the page's "Run both" and the library in a module
# Worker of the same Chromium, large pair, 2 threads, γ 3 and 4, T 0 and 0.8, five page loads.
part page 'node bench/browser.mjs --pair large --threads 2 --gamma 4 --temperature 0.8 --loads 1' \
  'node bench/browser.mjs --pair large --threads 2 --gamma 3,4 --temperature 0,0.8 --loads 5'
# The GPT on WebGPU (Chromium; SwiftShader where no GPU: its numbers say nothing about GPUs).
part gpu 'node bench/gpu.mjs --repeats 1' 'node bench/gpu.mjs'
# A busy machine: 1 and 2 threads while 0, 1, 2 and 4 CPU hogs run (native, Node, Chromium).
part load 'node bench/load.mjs --hogs 0,2 --repeats 1' 'node bench/load.mjs'
# The checkpoints people have, at real sizes: random-weight GGUF files of SmolLM2-135M / -360M
# shapes (written once into .cache/families/, ~4 GB), F32 and Q8_0: load time against reading
# the bytes, wasm memory against the weights, plain ms/token at 1 and 2 threads.
part families 'node bench/families.mjs --shapes smollm2-135m --tokens 8' 'node bench/families.mjs'
# Plain decoding against transformers.js generate() on the same weights (issue 40's goal line):
# the SmolLM2-360M shape's random folder and its ONNX export (each written once into .cache/:
# 1.4 + 1.6 GB, ~3 min and 8 GB of memory for the export), ~12 GB resident while it runs, ~3-4 min;
# --quick: the 135M shape, 8 tokens, one repeat.
part tfjsplain 'node bench/families-transformers.mjs --shapes smollm2-135m --tokens 8 --repeats 1' \
  'node bench/families-transformers.mjs --shapes smollm2-360m'
