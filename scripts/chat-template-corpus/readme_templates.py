"""Pulls the Jinja templates out of a README's code blocks (jndiogo/LLM-chat-templates lists them there)."""
import re, sys, os
text = sys.stdin.read()
out, prefix = sys.argv[1], sys.argv[2]
heading = 'untitled'
count = 0
for block in re.finditer(r'^(#+ [^\n]*)$|^```[^\n]*\n(.*?)^```', text, re.S | re.M):
    if block.group(1):
        heading = re.sub(r'[^A-Za-z0-9.]+', '-', block.group(1).lstrip('#').strip()).strip('-').lower() or 'untitled'
        continue
    body = block.group(2)
    if '{%' not in body and '{{' not in body or 'jinja_env' in body:
        continue
    count += 1
    open(os.path.join(out, f'{prefix}--{heading}-{count}.jinja'), 'w').write(body)
