import { Environment, Interpreter } from './jinja/index.js';

/**
 * A budget for one chat template rendering. Templates come from requests (vLLM's
 * `chat_template`) as well as from the model, and @huggingface/jinja has no limit of its
 * own: `range(100000000)`, a long loop, or a string doubled in a loop would block the
 * event loop or exhaust memory. Rendering is synchronous, so while one runs its budget is
 * the module's current one, counted by the interpreter's evaluate() (one step per
 * statement or expression evaluated) and checked on every string it produces.
 */
export interface TemplateBudget {
  /** Statements and expressions evaluated (a block counts 10), range() elements included. */
  maxSteps: number;
  /** Longest string any expression may produce, the output included. */
  maxOutputChars: number;
  /** What the steps message names as the bound (default: the maxChatTemplateSteps setting). */
  stepsBound?: string;
  /** Most items one list or dict the template builds may hold (default TEMPLATE_VALUE_ITEMS). */
  maxValueItems?: number;
}

/**
 * Items one list or dict a template builds may hold: real templates build lists of messages or
 * tools (thousands at most); `ns.a = ns.a + ns.a` doubling (a list grows 2^n in n steps) is
 * stopped here, at ~8 MB of references, before it can take the heap.
 */
export const TEMPLATE_VALUE_ITEMS = 1 << 20;
/**
 * Building values costs steps in proportion to their size, so the steps bound the memory and
 * CPU a rendering spends on them, not only the statements it runs: a list or dict one step
 * per VALUE_ITEMS_PER_STEP items, a string one per VALUE_CHARS_PER_STEP characters. Looking a
 * value up (a name, an attribute, an index) builds nothing and costs nothing more.
 */
export const VALUE_ITEMS_PER_STEP = 8;
export const VALUE_CHARS_PER_STEP = 1024;
const LOOKUPS: ReadonlySet<string> = new Set(['Identifier', 'MemberExpression', 'StringLiteral']);

/**
 * Using a large value the template built costs steps again, in proportion to its size, each
 * time it is looked up: consuming a value is as per-item as building it (`x in list`, `==`,
 * sum, max, join, a filter's scan), and without this charge a template that built one list of
 * 2^19 items could scan it once a step for ~10 ms each, past any time bound in workerd and the
 * page (issue 41, family 2). Values smaller than these are not tracked (a lookup of them
 * would cost a few steps at most); the conversation and the other inputs are not values the
 * template built and cost nothing to look up.
 */
export const TRACKED_VALUE_ITEMS = 256;
export const TRACKED_VALUE_CHARS = 16 * 1024;
/** Filters whose work grows as n log n in their operand's items: charged log2(n) times the items on top. */
const SORTING_FILTERS: ReadonlySet<string> = new Set(['sort', 'dictsort']);

/** The rendering went past its budget; the message names the bound, `bound` says which. */
export class TemplateBudgetError extends Error {
  constructor(
    message: string,
    readonly bound: 'steps' | 'output' = 'output',
  ) {
    super(message);
    this.name = 'TemplateBudgetError';
  }
}

interface Running {
  budget: TemplateBudget;
  steps: number;
  /** Large values this rendering built (their runtime value objects): each lookup pays for their size. */
  built: WeakSet<object>;
}

/** Steps a value's size costs: items (list or dict) or characters (string); 0 for anything else. */
function sizeSteps(value: unknown): number {
  if (Array.isArray(value)) return Math.floor(value.length / VALUE_ITEMS_PER_STEP);
  if (value instanceof Map) return Math.floor(value.size / VALUE_ITEMS_PER_STEP);
  if (typeof value === 'string') return Math.floor(value.length / VALUE_CHARS_PER_STEP);
  return 0;
}

function isLarge(value: unknown): boolean {
  if (Array.isArray(value)) return value.length >= TRACKED_VALUE_ITEMS;
  if (value instanceof Map) return value.size >= TRACKED_VALUE_ITEMS;
  return typeof value === 'string' && value.length >= TRACKED_VALUE_CHARS;
}

let running: Running | null = null;

/** Steps one block costs (see install). */
const BLOCK_STEPS = 10;

function spend(steps: number): void {
  if (running === null) return;
  running.steps += steps;
  if (running.steps > running.budget.maxSteps) {
    throw new TemplateBudgetError(`the chat template took more than ${running.budget.maxSteps} evaluation steps (${running.budget.stepsBound ?? 'maxChatTemplateSteps'})`, 'steps');
  }
}

type Evaluate = (statement: unknown, environment: unknown) => { type?: string; value?: unknown };

let installed = false;

/**
 * Wraps the interpreter's evaluate() once, and makes the global range() the budgeted one
 * while a budget runs (the library declares its globals in every render's environment);
 * outside a budgeted render both behave as before.
 */
function install(): void {
  if (installed) return;
  installed = true;
  const environment = Environment.prototype as unknown as { set: (name: string, value: unknown) => unknown };
  const set = environment.set;
  environment.set = function (this: unknown, name, value) {
    return set.call(this, name, running !== null && name === 'range' && typeof value === 'function' ? budgetedRange : value);
  };
  const prototype = Interpreter.prototype as unknown as { evaluate: Evaluate };
  const evaluate = prototype.evaluate;
  prototype.evaluate = function (this: unknown, statement, environment) {
    spend(1);
    const result = evaluate.call(this, statement, environment);
    if (running === null) return result;
    const value = result?.value;
    if (typeof value === 'string' && value.length > running.budget.maxOutputChars) {
      throw new TemplateBudgetError(
        `the chat template produced a text longer than ${running.budget.maxOutputChars} characters (maxPromptChars)`,
      );
    }
    if (LOOKUPS.has((statement as { type?: string } | undefined)?.type ?? 'Identifier')) {
      // A large value this rendering built is paid for again by whatever uses it.
      if (result !== null && typeof result === 'object' && running.built.has(result)) spend(sizeSteps(value));
      return result;
    }
    const items = Array.isArray(value) ? value.length : value instanceof Map ? value.size : -1;
    if (items > (running.budget.maxValueItems ?? TEMPLATE_VALUE_ITEMS)) {
      throw new TemplateBudgetError(`the chat template built a list or dict of more than ${running.budget.maxValueItems ?? TEMPLATE_VALUE_ITEMS} items`);
    }
    spend(sizeSteps(value));
    if (result !== null && typeof result === 'object' && isLarge(value)) running.built.add(result);
    return result;
  };
  // A block (a loop iteration's body, an if branch) costs the library ~20 times an
  // expression: its scope and loop variables. Counted as 10 steps, loops are bounded by time.
  const blocks = Interpreter.prototype as unknown as { evaluateBlock: (...args: unknown[]) => unknown };
  const evaluateBlock = blocks.evaluateBlock;
  blocks.evaluateBlock = function (this: unknown, ...args: unknown[]) {
    spend(BLOCK_STEPS);
    return evaluateBlock.apply(this, args);
  };
  // Sorting costs n log n comparisons, each a Python-style comparison of runtime values: the
  // operand's lookup and the sorted copy pay n; the log factor is paid here.
  const filters = Interpreter.prototype as unknown as { applyFilter: (operand: unknown, filterNode: unknown, environment: unknown) => unknown };
  const applyFilter = filters.applyFilter;
  filters.applyFilter = function (this: unknown, operand, filterNode, environment) {
    if (running !== null) {
      const node = filterNode as { type?: string; value?: unknown; callee?: { value?: unknown } };
      const name = node.type === 'Identifier' ? node.value : node.callee?.value;
      const value = (operand as { value?: unknown } | null)?.value;
      const items = Array.isArray(value) ? value.length : value instanceof Map ? value.size : 0;
      if (typeof name === 'string' && SORTING_FILTERS.has(name) && items > 1) spend(Math.floor((items * Math.ceil(Math.log2(items))) / VALUE_ITEMS_PER_STEP));
    }
    return applyFilter.call(this, operand, filterNode, environment);
  };
  // A filter or call given a huge count (indent(300000000), center, ...) would build a
  // huge string in one step: no argument may exceed the output bound.
  const interpreter = Interpreter.prototype as unknown as { evaluateArguments: (...args: unknown[]) => [unknown[], Map<string, unknown>] };
  const evaluateArguments = interpreter.evaluateArguments;
  interpreter.evaluateArguments = function (this: unknown, ...args: unknown[]) {
    const result = evaluateArguments.apply(this, args);
    if (running !== null) {
      const limit = running.budget.maxOutputChars;
      for (const value of [...result[0], ...result[1].values()]) {
        const inner = (value as { value?: unknown } | null)?.value;
        if (typeof inner === 'number' && Math.abs(inner) > limit) {
          throw new TemplateBudgetError(`the chat template passed ${inner} to a function or filter, more than ${limit} (maxPromptChars)`);
        }
      }
    }
    return result;
  };
}

/**
 * Jinja's range() with its elements paid for before they exist: range(100000000) would
 * otherwise allocate the whole list in one step.
 */
export function budgetedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  if (step === 0) throw new Error('range() step must not be zero');
  const length = Math.max(0, Math.ceil((stop - start) / step));
  if (!Number.isFinite(length)) throw new Error('range() bounds must be finite');
  spend(length);
  const result: number[] = [];
  for (let i = 0; i < length; i++) result.push(start + i * step);
  return result;
}

/** Runs `render` (synchronous) under `budget`; throws TemplateBudgetError when it goes past it. */
export function withTemplateBudget<T>(budget: TemplateBudget, render: () => T): T {
  install();
  const outer = running;
  running = { budget, steps: 0, built: new WeakSet() };
  try {
    return render();
  } finally {
    running = outer;
  }
}
