"""
The assistant turns with tool calls as the models' own chat templates write them, for
test/tools/template-turns.test.ts: a parser must read back exactly the calls a template
renders (the format the model was trained to write).

Templates: llama.cpp's models/templates/ (the copy under ~/.cache/edge-llm/llama-server/src,
or pass its folder). Rendered with jinja2 as transformers renders chat templates (its
tojson: json.dumps with ensure_ascii=False; raise_exception; loopcontrols), with the
messages as vLLM prepares them: arguments decoded to an object.

Run: python scripts/tools/render_tool_call_turns.py [templates-folder]
Writes test/fixtures/tools/template-turns.json.
"""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATES = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/edge-llm/llama-server/src/models/templates")

CASES = [
    ("deepseek_v3", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"),
    ("kimi_k2", "moonshotai-Kimi-K2.jinja"),
    ("hermes", "Qwen-Qwen2.5-7B-Instruct.jinja"),
    ("hermes", "Qwen-Qwen3-0.6B.jinja"),
    ("qwen3_coder", "Qwen3-Coder.jinja"),
    ("glm45", "GLM-4.6.jinja"),
]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather forecast", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "units": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time", "parameters": {"type": "object", "properties": {
        "zone": {"type": "string"}}, "required": ["zone"]}}},
]

CALLS = [
    {"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "units": "°C"}},
    {"name": "get_time", "arguments": {"zone": "Europe/Paris"}},
]


def render(source, messages, add_generation_prompt):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source).render(messages=messages, add_generation_prompt=add_generation_prompt, bos_token="", eos_token="", tools=TOOLS)


def main():
    out = []
    user = {"role": "user", "content": "Weather and time in Paris?"}
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for i, c in enumerate(CALLS)
        ],
    }
    for parser, name in CASES:
        with open(os.path.join(TEMPLATES, name)) as f:
            source = f.read()
        before = render(source, [user], False)
        full = render(source, [user, assistant], False)
        # The assistant turn (its role header included: generation prompts differ, e.g.
        # DeepSeek R1's opens a thought that a turn with calls does not have).
        assert full.startswith(before), name
        out.append({"template": name, "parser": parser, "turn": full[len(before):], "calls": CALLS, "tools": [t["function"] for t in TOOLS]})
    path = os.path.join(os.path.dirname(__file__), "../../test/fixtures/tools/template-turns.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
