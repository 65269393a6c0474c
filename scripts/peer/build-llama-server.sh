#!/usr/bin/env bash
# Builds llama.cpp's llama-server (the third-party upstream the gateway tests run against)
# from npm packages alone: node-llama-cpp ships the llama.cpp sources as a git bundle and
# prebuilt CPU libraries (libllama, libllama-common, libggml*) but no server binary. Only
# the server's own code (server, mtmd, cpp-httplib, the embedded UI) is compiled here; it
# is linked against the prebuilt libraries, which is much faster than building llama.cpp.
#
# Result: $LLAMA_SERVER_CACHE/bin/llama-server (default ~/.cache/edge-llm/llama-server),
# outside the repository, reused when present. Prints the binary's path on stdout.
set -euo pipefail

NODE_LLAMA_CPP_VERSION=3.21.1
CACHE="${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-llm/llama-server}"
BIN="$CACHE/bin/llama-server"
NICE="nice -n 19"

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi

log() { echo "[build-llama-server] $*" >&2; }
mkdir -p "$CACHE"

# 1. The npm packages: sources (git bundle) and the prebuilt linux-x64 CPU libraries.
#    Optional dependencies are omitted: they are the CUDA/Vulkan/other-platform builds.
PKG="$CACHE/npm"
PREBUILT="$PKG/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
if [ ! -f "$PREBUILT/libllama-common.so" ]; then
  log "installing node-llama-cpp@$NODE_LLAMA_CPP_VERSION into $PKG"
  mkdir -p "$PKG"
  [ -f "$PKG/package.json" ] || echo '{"private":true}' >"$PKG/package.json"
  (cd "$PKG" && npm install --no-save --ignore-scripts --omit=optional --no-audit --no-fund \
    "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" "@node-llama-cpp/linux-x64@$NODE_LLAMA_CPP_VERSION" >&2)
fi

# 2. The sources, from the bundle that matches the prebuilt libraries.
SRC="$CACHE/src"
if [ ! -f "$SRC/tools/server/server.cpp" ]; then
  rm -rf "$SRC"
  git clone -q "$PKG/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$SRC"
fi

# 3. Configure (CPU only, no network: no curl, no prebuilt-UI download, no OpenSSL).
BUILD="$CACHE/build"
if [ ! -f "$BUILD/build.ninja" ]; then
  log "configuring in $BUILD"
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF >&2
fi

# 4. Compile only the objects of the server's own targets; CMake's Ninja generator lets
#    objects wait for generated sources only, not for the libraries they will link to.
TARGETS=(llama-server llama-server-impl server-context mtmd cpp-httplib llama-ui vendor-hash)
OBJECTS=()
pattern="CMakeFiles/($(IFS='|'; echo "${TARGETS[*]}"))\.dir/.*\.o:"
while IFS= read -r path; do OBJECTS+=("$path"); done < <(
  ninja -C "$BUILD" -t targets all | grep -E "$pattern" | sed 's/:.*//')
[ "${#OBJECTS[@]}" -gt 0 ] || { log "no objects found for ${TARGETS[*]}"; exit 1; }
log "compiling ${#OBJECTS[@]} objects (nice -n 19, 2 jobs)"
$NICE ninja -C "$BUILD" -j 2 "${OBJECTS[@]}" >&2

# 5. Link against the prebuilt libraries, copied next to the binary ($ORIGIN rpath).
mkdir -p "$CACHE/bin"
cp -f "$PREBUILT"/*.so "$CACHE/bin/"
log "linking $BIN"
(cd "$BUILD" && $NICE g++ -O2 -o "$BIN.tmp" "${OBJECTS[@]}" \
  -L"$CACHE/bin" -l:libllama-common.so -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so \
  -Wl,-rpath,'$ORIGIN' -pthread -ldl)
mv -f "$BIN.tmp" "$BIN"
"$BIN" --version >&2
echo "$BIN"
