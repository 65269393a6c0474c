/**
 * PEFT's module patterns (a string target_modules, rank_pattern and alpha_pattern keys) run by
 * an engine without backtracking. An adapter's config comes from whoever uploaded it: run by
 * JavaScript's backtracking RegExp, `"(.*.*)*!"` never finished and the server stopped
 * answering, SIGTERM included (issue 41, family 10).
 *
 * A pattern is parsed by the guided-decoding regex parser (src/guided/regex-parser.ts: the
 * regular subset of Python's `re`; backreferences and lookaround are refused), compiled to
 * a Thompson NFA, and matched by simulating every state at once: time is linear in the key's
 * length × the NFA's states, whatever the pattern. A budget of state visits over one
 * adapter's patterns bounds the whole check (a few tens of ms).
 */
import { ANY_CHAR, CharSet, LINE_TERMINATORS } from '../guided/char-set.js';
import { parseRegex, RegexSupportError, type RegexNode } from '../guided/regex-parser.js';

/** Characters of one pattern: PEFT's own patterns are a few dozen; generated ones list layers. */
export const MAX_MODULE_PATTERN_CHARS = 16 * 1024;
/** NFA states of one pattern (each {m,n} copies its body). */
export const MAX_MODULE_PATTERN_STATES = 20_000;
/** State visits over all of one adapter's matches: ~10 ns each, so ~0.1 s at most. */
export const MODULE_PATTERN_VISIT_BUDGET = 10_000_000;

export class ModulePatternError extends Error {}

type State = { kind: 'set'; set: CharSet; next: number } | { kind: 'split'; out: number[] } | { kind: 'match' };

const DOT = ANY_CHAR.subtract(LINE_TERMINATORS);

/** The visits one adapter's pattern checks may make together. */
export class PatternBudget {
  used = 0;
  constructor(readonly limit = MODULE_PATTERN_VISIT_BUDGET) {}
}

/** A compiled pattern; `matches` is linear in the key's length × its states. */
export class ModulePattern {
  private constructor(
    readonly source: string,
    private readonly states: readonly State[],
    private readonly start: number,
  ) {}

  /**
   * PEFT's rule (`re.match(rf"(.*\.)?({pattern})$", key)`): the pattern matches the whole
   * module name or a dotted suffix of it.
   */
  static compile(pattern: string): ModulePattern {
    if (pattern.length > MAX_MODULE_PATTERN_CHARS) {
      throw new ModulePatternError(`the pattern has ${pattern.length} characters, more than the ${MAX_MODULE_PATTERN_CHARS} accepted`);
    }
    let node: RegexNode;
    try {
      node = parseRegex(pattern, { maxRepetition: 100, maxDepth: 32 });
    } catch (error) {
      if (error instanceof RegexSupportError) throw new ModulePatternError(`the pattern cannot be run safely: ${error.message}`);
      throw error;
    }
    const dottedPrefix: RegexNode = {
      type: 'repeat',
      min: 0,
      max: 1,
      node: { type: 'seq', items: [{ type: 'repeat', min: 0, max: Infinity, node: { type: 'set', set: DOT } }, { type: 'set', set: CharSet.fromString('.') }] },
    };
    const states: State[] = [{ kind: 'match' }];
    const start = build({ type: 'seq', items: [dottedPrefix, node] }, 0, states);
    return new ModulePattern(pattern, states, start);
  }

  /** True when the whole key matches; throws when the adapter's budget runs out. */
  matches(key: string, budget: PatternBudget): boolean {
    const { states } = this;
    const seen = new Int32Array(states.length).fill(-1);
    let current: number[] = [];
    let generation = 0;
    const add = (list: number[], first: number): void => {
      const stack = [first];
      while (stack.length > 0) {
        const index = stack.pop()!;
        if (seen[index] === generation) continue;
        seen[index] = generation;
        if (++budget.used > budget.limit) {
          throw new ModulePatternError(`matching its module patterns took more than ${budget.limit} steps`);
        }
        const state = states[index]!;
        if (state.kind === 'split') for (let i = state.out.length - 1; i >= 0; i--) stack.push(state.out[i]!);
        else list.push(index);
      }
    };
    add(current, this.start);
    for (const char of key) {
      const code = char.codePointAt(0)!;
      generation++;
      const next: number[] = [];
      for (const index of current) {
        const state = states[index]!;
        if (state.kind === 'set' && state.set.has(code)) add(next, state.next);
      }
      current = next;
      if (current.length === 0) return false;
    }
    return current.some((index) => states[index]!.kind === 'match');
  }
}

/** Adds the states of `node` followed by state `next`; returns its entry state. */
function build(node: RegexNode, next: number, states: State[]): number {
  const push = (state: State): number => {
    if (states.length >= MAX_MODULE_PATTERN_STATES) {
      throw new ModulePatternError(`the pattern needs more than ${MAX_MODULE_PATTERN_STATES} matcher states`);
    }
    states.push(state);
    return states.length - 1;
  };
  switch (node.type) {
    case 'set':
      return push({ kind: 'set', set: node.set, next });
    case 'seq': {
      let entry = next;
      for (let i = node.items.length - 1; i >= 0; i--) entry = build(node.items[i]!, entry, states);
      return entry;
    }
    case 'alt':
      return push({ kind: 'split', out: node.options.map((option) => build(option, next, states)) });
    case 'repeat': {
      let entry = next;
      if (node.max === Infinity) {
        const loop = push({ kind: 'split', out: [] });
        (states[loop] as { out: number[] }).out = [build(node.node, loop, states), next];
        entry = loop;
      } else {
        for (let i = 0; i < node.max - node.min; i++) entry = push({ kind: 'split', out: [build(node.node, entry, states), next] });
      }
      for (let i = 0; i < node.min; i++) entry = build(node.node, entry, states);
      return entry;
    }
  }
}
