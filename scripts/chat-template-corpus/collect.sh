#!/usr/bin/env bash
# Collects the chat-template corpus (test/fixtures/chat-templates/templates/) from public sources:
#  - llama.cpp's models/templates/ (shipped in node-llama-cpp's source bundle on npm; unpacked by
#    scripts/peer/build-llama-server.sh under ~/.cache/edge-llm/llama-server/src);
#  - git mirrors of chujiezheng/chat_templates, theroyallab/llm-prompt-templates,
#    contrapuntal/chat-template-patches (upstream Qwen3.5/3.6 and Gemma 4 templates and the
#    community variants it archives), jndiogo/LLM-chat-templates (templates in its README);
#  - a few of vLLM's examples/ (vllm-examples.json);
#  - the chat templates of the model fixtures in this repository.
# Identical sources are kept once. Usage: collect.sh <mirror-root> (a folder of <owner>+<repo>/repo git dirs).
set -euo pipefail
MIRRORS=${1:-/work/.mirror}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$ROOT/test/fixtures/chat-templates/templates
rm -rf "$OUT" && mkdir -p "$OUT"
LLAMA=${LLAMA_CPP_SRC:-$HOME/.cache/edge-llm/llama-server/src}
for f in "$LLAMA"/models/templates/*.jinja; do cp "$f" "$OUT/llama.cpp--$(basename "$f")"; done
from_git() { # repo, path, name
  git --git-dir="$MIRRORS/$1/repo" show "HEAD:$2" > "$OUT/$3"
}
for p in $(git --git-dir="$MIRRORS/chujiezheng+chat_templates/repo" ls-tree -r --name-only HEAD | grep '\.jinja$'); do
  from_git chujiezheng+chat_templates "$p" "chujiezheng--$(basename "$p")"
done
for p in $(git --git-dir="$MIRRORS/theroyallab+llm-prompt-templates/repo" ls-tree -r --name-only HEAD | grep '\.jinja$'); do
  from_git theroyallab+llm-prompt-templates "$p" "theroyallab--$(echo "$p" | tr / _)"
done
for p in $(git --git-dir="$MIRRORS/contrapuntal+chat-template-patches/repo" ls-tree -r --name-only HEAD | grep '\.jinja$'); do
  from_git contrapuntal+chat-template-patches "$p" "contrapuntal--$(echo "$p" | sed 's#^templates/##; s#^docs/sources/##' | tr / _)"
done
git --git-dir="$MIRRORS/jndiogo+LLM-chat-templates/repo" show HEAD:README.md | python3 "$HERE/readme_templates.py" "$OUT" jndiogo
for f in "$ROOT"/test/fixtures/multimodal/*/tokenizer_config.json "$ROOT"/models/stories260k/tokenizer_config.json; do
  name=$(basename "$(dirname "$f")")
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1])).get("chat_template"); t and open(sys.argv[2],"w").write(t)' "$f" "$OUT/fixture--$name.jinja"
done
for f in "$ROOT"/test/fixtures/transformers5/*/chat_template.jinja; do cp "$f" "$OUT/fixture--$(basename "$(dirname "$f")").jinja"; done
# vLLM's examples/ (read from vllm-project/vllm at the commits listed; the repository is too large to mirror here).
python3 -c 'import json,sys,os; [open(os.path.join(sys.argv[2], "vllm--" + os.path.basename(e["path"])), "w").write(e["text"]) for e in json.load(open(sys.argv[1]))]' "$HERE/vllm-examples.json" "$OUT"
# Identical templates once (the first name in sort order stays).
python3 - "$OUT" <<'PY'
import hashlib, os, sys
seen = {}
for name in sorted(os.listdir(sys.argv[1])):
    path = os.path.join(sys.argv[1], name)
    digest = hashlib.sha256(open(path, 'rb').read()).hexdigest()
    if digest in seen or os.path.getsize(path) == 0: os.remove(path)
    else: seen[digest] = name
print(len(seen), 'templates')
PY
