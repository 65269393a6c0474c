#!/usr/bin/env bash
# Builds llama.cpp's test-backend-ops (its per-op benchmark: `perf -o MUL_MAT -b CPU`) from the
# same node-llama-cpp sources and prebuilt CPU libraries that build-llama-server.sh uses, so the
# kernel study (bench/kernels/) times the very ggml kernels llama-server runs. Only the one test
# source is compiled (Release flags, -O3 -DNDEBUG) and linked against the prebuilt libggml;
# the CPU backend is loaded at run time from the same variant libraries as llama-server's.
#
# Two changes to the copy that is compiled: upstream sets the CPU backend's thread count to
# std::thread::hardware_concurrency(); here GGML_N_THREADS overrides it, so 1 and 2 threads can
# be timed like onnxruntime's intra-op settings. And perf mode repeats each case for at least
# one second; GGML_PERF_MIN_US sets that time (a loaded 2-core machine needs shorter cases).
#
# Result: $LLAMA_SERVER_CACHE/../test-backend-ops/test-backend-ops (default
# ~/.cache/edge-llm/test-backend-ops/), reused when present. Prints its path on stdout.
set -euo pipefail

SERVER_CACHE="${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-llm/llama-server}"
OUT="$(dirname "$SERVER_CACHE")/test-backend-ops"
BIN="$OUT/test-backend-ops"
if [ -x "$BIN" ] && grep -q GGML_PERF_MIN_US "$OUT/test-backend-ops.cpp" 2>/dev/null; then
  echo "$BIN"
  exit 0
fi
log() { echo "[build-test-backend-ops] $*" >&2; }

# The server's build provides the sources and the prebuilt libraries.
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -f "$SERVER_CACHE/bin/libggml-base.so" ] || bash "$HERE/build-llama-server.sh" >/dev/null
SRC="$SERVER_CACHE/src"
mkdir -p "$OUT"
sed 's|^#   define N_THREADS std::thread::hardware_concurrency()|#   define N_THREADS (getenv("GGML_N_THREADS") ? (size_t) atoi(getenv("GGML_N_THREADS")) : (size_t) std::thread::hardware_concurrency())|' \
  "$SRC/tests/test-backend-ops.cpp" >"$OUT/test-backend-ops.cpp"
sed -i 's|} while (total_time_us < 1000\*1000); // run for at least 1 second|} while (total_time_us < (getenv("GGML_PERF_MIN_US") ? atoll(getenv("GGML_PERF_MIN_US")) : 1000*1000));|' "$OUT/test-backend-ops.cpp"
grep -q 'GGML_N_THREADS' "$OUT/test-backend-ops.cpp" || { log "could not set the thread count hook"; exit 1; }
grep -q 'GGML_PERF_MIN_US' "$OUT/test-backend-ops.cpp" || { log "could not set the perf time hook"; exit 1; }
cp -f "$SERVER_CACHE"/bin/*.so "$OUT/"
log "compiling (nice -n 19)"
nice -n 19 g++ -std=c++17 -O3 -DNDEBUG -I"$SRC/ggml/include" -o "$BIN.tmp" "$OUT/test-backend-ops.cpp" \
  -L"$OUT" -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,'$ORIGIN' -pthread -ldl
mv -f "$BIN.tmp" "$BIN"
echo "$BIN"
