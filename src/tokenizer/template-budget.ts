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
}

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
    if (running !== null && typeof result?.value === 'string' && result.value.length > running.budget.maxOutputChars) {
      throw new TemplateBudgetError(
        `the chat template produced a text longer than ${running.budget.maxOutputChars} characters (maxPromptChars)`,
      );
    }
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
  running = { budget, steps: 0 };
  try {
    return render();
  } finally {
    running = outer;
  }
}
