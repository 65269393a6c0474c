"""
References for the chat-template corpus: every template in test/fixtures/chat-templates/templates/
x every conversation in conversations.json, rendered by transformers 5 (its render_jinja_template,
the function apply_chat_template runs) with the messages, tools and variables prepared as vLLM's
chat_utils prepares them (parse_chat_messages, _postprocess_messages, the content format its
"auto" detection picks, tools as its pydantic model dumps them, documents None).

strftime_now is given a fixed clock (2025-03-07 09:05:02, local time) so references do not depend
on the day; the test sets the same clock. Output: test/fixtures/chat-templates/references.json.
Run with /work/venv/bin/python (transformers 5, jinja2).
"""
import copy, json, os, sys
from collections import deque
from datetime import datetime

import jinja2
import transformers
from transformers.utils import chat_template_utils

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
FIXTURES = os.path.join(ROOT, 'test', 'fixtures', 'chat-templates')
FIXED_NOW = datetime(2025, 3, 7, 9, 5, 2)
BOS, EOS = '<|bos|>', '<|eos|>'


class FixedClock(datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


chat_template_utils.datetime = FixedClock


# --- vLLM's content format detection (entrypoints/chat_utils.py), on jinja2's syntax tree ---
def _is_var_access(node, varname):
    return isinstance(node, jinja2.nodes.Name) and node.ctx == 'load' and node.name == varname

def _is_attr_access(node, varname, key):
    if isinstance(node, jinja2.nodes.Getitem):
        return _is_var_access(node.node, varname) and isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == key
    if isinstance(node, jinja2.nodes.Getattr):
        return _is_var_access(node.node, varname) and node.attr == key
    return False

def _is_var_or_elems_access(node, varname, key=None):
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _is_var_or_elems_access(node.node, varname, key)
    if isinstance(node, jinja2.nodes.Test):
        return _is_var_or_elems_access(node.node, varname, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _is_var_or_elems_access(node.node, varname, key)
    return _is_attr_access(node, varname, key) if key else _is_var_access(node, varname)

def _iter_nodes_assign_var_or_elems(root, varname):
    yield root, varname
    related = deque([varname])
    while related:
        name = related.popleft()
        for assign in root.find_all(jinja2.nodes.Assign):
            if _is_var_or_elems_access(assign.node, name):
                assert isinstance(assign.target, jinja2.nodes.Name)
                yield assign, assign.target.name
                if assign.target.name != name:
                    related.append(assign.target.name)

def _iter_nodes_assign_messages_item(root):
    names = [v for _, v in _iter_nodes_assign_var_or_elems(root, 'messages')]
    for loop in root.find_all(jinja2.nodes.For):
        for name in names:
            if _is_var_or_elems_access(loop.iter, name):
                assert isinstance(loop.target, jinja2.nodes.Name)
                yield loop, loop.target.name
                break

def _iter_nodes_assign_content_item(root):
    names = [v for _, v in _iter_nodes_assign_messages_item(root)]
    for loop in root.find_all(jinja2.nodes.For):
        for name in names:
            if _is_var_or_elems_access(loop.iter, name, 'content'):
                assert isinstance(loop.target, jinja2.nodes.Name)
                yield loop, loop.target.name
                break

def detect_content_format(source):
    try:
        compiled = chat_template_utils._compile_jinja_template(source)
        ast = compiled.environment.parse(source)
    except Exception:
        return 'string'
    try:
        next(_iter_nodes_assign_content_item(ast))
    except StopIteration:
        return 'string'
    except Exception:
        return 'string'
    return 'openai'


# --- vLLM's message preparation (parse_chat_messages + _postprocess_messages) ---
def prepare_messages(messages, content_format):
    conversation = []
    for message in messages:
        role = message['role']
        content = message.get('content')
        parts = [] if content is None else [{'type': 'text', 'text': content}] if isinstance(content, str) else content
        texts = [p.get('text') if p['type'] == 'text' else p.get('refusal') for p in parts]
        texts = [t for t in texts if t is not None]
        out = {'role': role, 'content': [{'type': 'text', 'text': t} for t in texts] if content_format == 'openai' else '\n'.join(texts)}
        if role == 'assistant':
            if message.get('tool_calls') is not None:
                out['tool_calls'] = [
                    {'id': c['id'], 'type': c['type'], 'function': {'name': c['function']['name'], 'arguments': c['function']['arguments']}}
                    for c in message['tool_calls']
                ]
            if message.get('reasoning') is not None:
                out['reasoning'] = message['reasoning']
                out['reasoning_content'] = message['reasoning']
        elif role == 'tool':
            if 'tool_call_id' in message:
                out['tool_call_id'] = message['tool_call_id']
            if isinstance(out['content'], list):
                out['content'] = '\n'.join(p['text'] for p in out['content'])
        if isinstance(message.get('name'), str):
            out['name'] = message['name']
        if role == 'developer':
            out['tools'] = message.get('tools')
        conversation.append(out)
    for message in conversation:
        if message['role'] == 'assistant' and 'tool_calls' in message:
            if len(message['tool_calls']) == 0:
                message.pop('tool_calls')
                continue
            for call in message['tool_calls']:
                arguments = call['function'].get('arguments')
                if isinstance(arguments, str):
                    try:
                        call['function']['arguments'] = json.loads(arguments)
                    except json.JSONDecodeError:
                        call['function']['arguments'] = {}
                elif not isinstance(arguments, (dict, list)):
                    call['function']['arguments'] = {}
    return conversation


def tool_dicts(tools):
    """ChatCompletionToolsParam.model_dump(): declared fields (defaults None), then the extra keys."""
    if tools is None:
        return None
    dumped = []
    for tool in tools:
        fn = tool['function']
        function = {'name': fn['name'], 'description': fn.get('description'), 'parameters': fn.get('parameters')}
        function.update({k: v for k, v in fn.items() if k not in function})
        entry = {'type': tool.get('type', 'function'), 'function': function}
        entry.update({k: v for k, v in tool.items() if k not in entry})
        dumped.append(entry)
    return dumped


def render(source, conversation):
    fmt = detect_content_format(source)
    messages = prepare_messages(copy.deepcopy(conversation['messages']), fmt)
    kwargs = dict(conversation.get('chat_template_kwargs', {}))
    try:
        text = chat_template_utils.render_jinja_template(
            conversations=[messages],
            tools=tool_dicts(conversation.get('tools')),
            documents=None,
            chat_template=source,
            add_generation_prompt=conversation.get('add_generation_prompt', True),
            bos_token=BOS,
            eos_token=EOS,
            **kwargs,
        )[0][0]
        return {'text': text}, fmt
    except Exception as error:  # the template refuses the conversation (raise_exception) or fails
        return {'error': f'{type(error).__name__}: {error}'[:300]}, fmt


def main():
    conversations = json.load(open(os.path.join(HERE, 'conversations.json')))
    names = sorted(os.listdir(os.path.join(FIXTURES, 'templates')))
    results = {}
    for name in names:
        source = open(os.path.join(FIXTURES, 'templates', name), encoding='utf-8').read()
        row = {}
        for conversation in conversations:
            outcome, fmt = render(source, conversation)
            row[conversation['name']] = outcome
        results[name] = {'contentFormat': fmt, 'outcomes': row}
    out = {
        'generator': f'scripts/chat-template-corpus/build_references.py (transformers {transformers.__version__}, jinja2 {jinja2.__version__})',
        'bosToken': BOS, 'eosToken': EOS, 'now': FIXED_NOW.isoformat(),
        'conversations': conversations,
        'templates': results,
    }
    with open(os.path.join(FIXTURES, 'references.json'), 'w', encoding='utf-8') as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    errors = sum('error' in o for r in results.values() for o in r['outcomes'].values())
    print(len(names), 'templates x', len(conversations), 'conversations;', errors, 'refused')


main()
