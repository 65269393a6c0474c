/**
 * Which shape a chat template wants message content in, decided from the template's own
 * syntax tree as vLLM's `--chat-template-content-format auto` decides it:
 *  - "openai": the template loops over a message's content (`{% for part in message['content'] %}`),
 *    so content reaches it as a list of parts ({"type": "text", "text": ...});
 *  - "string": anything else; content is one string (text parts joined with newlines).
 *
 * The rule, as vLLM applies it: the names that hold the conversation are `messages` and any
 * variable set from it (through filters, tests or slices: `{% set loop_messages = messages[1:] %}`);
 * a message is the target of a `for` over one of them; the template is "openai" when some
 * `for` iterates over such a message's `content` (again through filters, tests or slices).
 */
export type ContentFormat = 'string' | 'openai';

interface Node {
  type: string;
  [field: string]: unknown;
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** Every node of the tree, depth first (macros and nested blocks included, as jinja2's find_all). */
function* allNodes(root: Node): Generator<Node> {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push(value[i]);
    } else if (value instanceof Map) {
      for (const [key, entry] of value) stack.push(key, entry);
    } else if (isNode(value)) {
      yield value;
      for (const field of Object.values(value)) if (typeof field === 'object' && field !== null) stack.push(field);
    }
  }
}

function isName(node: unknown, name: string): boolean {
  return isNode(node) && node.type === 'Identifier' && node.value === name;
}

/** `name.key` or `name['key']`. */
function isKeyOf(node: Node, name: string, key: string): boolean {
  if (node.type !== 'MemberExpression' || !isName(node.object, name)) return false;
  const property = node.property as Node;
  if (node.computed) return property.type === 'StringLiteral' && property.value === key;
  return isName(property, key);
}

/** The variable (or its `key`) itself, or seen through filters, tests, a slice, or a `for ... if` selection. */
function accesses(node: unknown, name: string, key?: string): boolean {
  if (!isNode(node)) return false;
  if (node.type === 'FilterExpression' || node.type === 'TestExpression') return accesses(node.operand, name, key);
  if (node.type === 'SelectExpression') return accesses(node.lhs, name, key);
  if (node.type === 'MemberExpression' && node.computed && isNode(node.property) && node.property.type === 'SliceExpression') {
    return accesses(node.object, name, key);
  }
  return key === undefined ? isName(node, name) : isKeyOf(node, name, key);
}

/** Thrown where vLLM's walk would fail an assertion: it then keeps its default ("string"). */
class UnsupportedShape extends Error {}

function loopTargetName(loop: Node): string {
  if (!isNode(loop.loopvar) || loop.loopvar.type !== 'Identifier') throw new UnsupportedShape();
  return loop.loopvar.value as string;
}

function messageListNames(nodes: readonly Node[]): string[] {
  const names = ['messages'];
  for (let i = 0; i < names.length; i++) {
    const related = names[i];
    for (const node of nodes) {
      if (node.type !== 'Set' || node.value === null || !accesses(node.value, related)) continue;
      if (!isNode(node.assignee) || node.assignee.type !== 'Identifier') throw new UnsupportedShape();
      const name = node.assignee.value as string;
      if (!names.includes(name)) names.push(name);
    }
  }
  return names;
}

/** The content format a parsed template (@huggingface/jinja's Program) wants. */
export function detectContentFormat(program: unknown): ContentFormat {
  if (!isNode(program)) return 'string';
  const nodes = [...allNodes(program)];
  const loops = nodes.filter((node) => node.type === 'For');
  try {
    const lists = messageListNames(nodes);
    const messageNames = loops.filter((loop) => lists.some((name) => accesses(loop.iterable, name))).map(loopTargetName);
    const loopsOverContent = loops.some((loop) => messageNames.some((name) => accesses(loop.iterable, name, 'content')));
    return loopsOverContent ? 'openai' : 'string';
  } catch (error) {
    if (error instanceof UnsupportedShape) return 'string';
    throw error;
  }
}
