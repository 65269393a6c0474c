"""
llama.cpp's server as the second reference for the reasoning split (test/reasoning/llama-server.test.ts):
llama-server (scripts/peer/build-llama-server.sh) serves test/fixtures/gguf/tiny-qwen3.gguf with
--jinja (Qwen3's own template); each chat request is sent twice, with "reasoning_format": "none"
(the raw output) and "deepseek" (llama.cpp's split into reasoning_content / content). Greedy decoding
and logit_bias steer the tiny random model into the shapes that matter: a closed thought, an empty
one, an unclosed one, no tag, and a </think> without <think>.

Run: python scripts/peer/llama_reasoning_reference.py [port]   (needs the built llama-server)
Writes test/fixtures/reasoning/llama-server-deepseek.json.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(__file__), "../..")
PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 18401
URL = f"http://127.0.0.1:{PORT}"


def call(path, body):
    request = urllib.request.Request(URL + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    return json.load(urllib.request.urlopen(request))


def main():
    binary = subprocess.run(["bash", os.path.join(ROOT, "scripts/peer/build-llama-server.sh")], capture_output=True, text=True, check=True).stdout.strip()
    server = subprocess.Popen([binary, "-m", os.path.join(ROOT, "test/fixtures/gguf/tiny-qwen3.gguf"), "--jinja", "--host", "127.0.0.1",
                               "--port", str(PORT), "-c", "512", "-t", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                if call("/tokenize", {"content": "x"}):
                    break
            except Exception:
                time.sleep(0.2)
        think = call("/tokenize", {"content": "<think>", "parse_special": True})["tokens"]
        end = call("/tokenize", {"content": "</think>", "parse_special": True})["tokens"]
        assert len(think) == 1 and len(end) == 1

        def case(name, bias):
            body = {"messages": [{"role": "user", "content": "Hello"}], "temperature": 0, "max_tokens": 12,
                    "repeat_penalty": 1000, "repeat_last_n": 64, "logit_bias": bias}
            raw = call("/v1/chat/completions", {**body, "reasoning_format": "none"})["choices"][0]["message"]["content"]
            split = call("/v1/chat/completions", {**body, "reasoning_format": "deepseek"})["choices"][0]["message"]
            return {"name": name, "output": raw, "reasoning_content": split.get("reasoning_content"), "content": split.get("content")}

        cases = []
        for bias in range(90, 0, -10):
            found = case("closed thought", [[think[0], 100], [end[0], bias]])
            thought = found["output"].split("</think>")[0]
            if found["output"].startswith("<think>") and len(thought) > len("<think>") and "</think>" in found["output"]:
                cases.append(found)
                break
        cases.append(case("empty thought", [[think[0], 100], [end[0], 100]]))
        cases.append(case("unclosed thought", [[think[0], 100]]))
        cases.append(case("no tag", []))
        cases.append(case("</think> without <think>", [[end[0], 100]]))
    finally:
        server.terminate()
        server.wait()
    with open(os.path.join(ROOT, "test/fixtures/reasoning/llama-server-deepseek.json"), "w") as f:
        json.dump({"llama_server": binary.split("/edge-llm/")[-1], "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
