/**
 * `edge-llm` command lines → what to do. Flags as vLLM's argparse takes them: `--flag value`
 * or `--flag=value`; a switch alone means true, `--no-switch` false; a list flag takes the
 * words that follow it (nargs="+") and may be repeated. Everything is checked here, before
 * anything is loaded: an unknown flag or a bad value is a CliUsageError naming it.
 */
import { SERVE_OPTIONS, SETTING_FLAGS, CliUsageError, nearestFlag, settingValueFromWords, type SettingFlag } from './flags.js';

export interface ServeArgs {
  command: 'serve' | 'pull';
  /** The MODEL argument (or --model): a folder, a .gguf file, or a Hugging Face id. */
  model?: string;
  /** "--model" when the model came from that flag rather than the MODEL argument. */
  modelFlag?: string;
  /** Settings given as flags, converted and checked, by setting key. */
  settings: Record<string, unknown>;
  /** The flag each setting came from, for the startup report. */
  flagNames: Record<string, string>;
  configPath?: string;
  revision?: string;
  enableAutoToolChoice: boolean;
}

export type CliCommand = ServeArgs | { command: 'help'; topic: 'main' | 'serve' | 'pull' } | { command: 'version' };

export const COMMANDS = ['serve', 'pull'] as const;

type Match = { kind: 'setting'; flag: SettingFlag; negated: boolean; spelling: string } | { kind: 'option'; flag: string; spelling: string };

function matchFlag(spelling: string): Match | undefined {
  for (const flag of SETTING_FLAGS) {
    const { surface } = flag;
    if (spelling === `--${surface.flag}` || surface.aliases?.includes(spelling)) return { kind: 'setting', flag, negated: false, spelling };
    if (surface.text === 'bool' && (spelling === `--no-${surface.flag}` || (surface.negation && spelling === `--${surface.negation}`))) {
      return { kind: 'setting', flag, negated: true, spelling };
    }
  }
  if (spelling === '-h') return { kind: 'option', flag: 'help', spelling };
  if (spelling === '-v' || spelling === '-V') return { kind: 'option', flag: 'version', spelling };
  const option = SERVE_OPTIONS.find((o) => spelling === `--${o.flag}`);
  return option ? { kind: 'option', flag: option.flag, spelling } : undefined;
}

const isFlagWord = (word: string) => word.startsWith('-') && word !== '-' && !/^-\d/.test(word);

/** Parses argv (without node and the script). No command: `serve`, as `npm start` runs it. */
export function parseCommandLine(argv: readonly string[]): CliCommand {
  const words = [...argv];
  let command: 'serve' | 'pull' = 'serve';
  let explicitCommand = false;
  if (words[0] !== undefined && !isFlagWord(words[0])) {
    if (words[0] === 'help') return { command: 'help', topic: words[1] === 'pull' ? 'pull' : words[1] === 'serve' ? 'serve' : 'main' };
    if (!(COMMANDS as readonly string[]).includes(words[0])) {
      throw new CliUsageError(`unknown command "${words[0]}": the commands are ${COMMANDS.join(', ')} (edge-llm --help)`);
    }
    command = words.shift() as 'serve' | 'pull';
    explicitCommand = true;
  }
  const parsed: ServeArgs = { command, settings: {}, flagNames: {}, enableAutoToolChoice: false };
  const lists = new Map<string, string[]>();
  const positionals: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === '--') {
      positionals.push(...words.slice(i + 1));
      break;
    }
    if (!isFlagWord(word)) {
      positionals.push(word);
      continue;
    }
    const eq = word.indexOf('=');
    const spelling = eq > 0 ? word.slice(0, eq) : word;
    const inline = eq > 0 ? word.slice(eq + 1) : undefined;
    const match = matchFlag(spelling);
    if (match === undefined) throw new CliUsageError(`unknown flag ${spelling}; did you mean ${nearestFlag(spelling)}? (edge-llm ${command} --help lists them)`);
    /** The flag's one value: inline, or the next word. */
    const takeValue = (): string => {
      if (inline !== undefined) return inline;
      const next = words[i + 1];
      if (next === undefined || isFlagWord(next)) throw new CliUsageError(`${spelling} needs a value`);
      i++;
      return next;
    };
    if (match.kind === 'option') {
      switch (match.flag) {
        case 'help':
          return { command: 'help', topic: explicitCommand ? command : 'main' };
        case 'version':
          return { command: 'version' };
        case 'config':
          parsed.configPath = takeValue();
          break;
        case 'revision':
          parsed.revision = takeValue();
          break;
        case 'enable-auto-tool-choice':
          parsed.enableAutoToolChoice = true;
          break;
        case 'enable-lora':
          break;
      }
      continue;
    }
    const { flag } = match;
    const key = flag.key;
    let value: unknown;
    if (flag.surface.text === 'bool') {
      if (match.negated) {
        if (inline !== undefined) throw new CliUsageError(`${spelling} takes no value`);
        value = false;
      } else value = inline === undefined ? true : settingValueFromWords(flag, [inline], spelling);
    } else if (flag.surface.many) {
      const taken = inline !== undefined ? [inline] : [];
      while (inline === undefined && words[i + 1] !== undefined && !isFlagWord(words[i + 1]!)) taken.push(words[++i]!);
      if (taken.length === 0) throw new CliUsageError(`${spelling} needs a value`);
      const all = [...(lists.get(key) ?? []), ...taken];
      lists.set(key, all);
      value = settingValueFromWords(flag, all, spelling);
    } else {
      value = settingValueFromWords(flag, [takeValue()], spelling);
    }
    if (key === 'modelDir') {
      // The MODEL argument's other spelling: it may be a Hugging Face id, resolved before the settings.
      parsed.model = value as string;
      parsed.modelFlag = spelling;
      continue;
    }
    parsed.settings[key] = value;
    parsed.flagNames[key] = spelling;
  }
  if (positionals.length > 0) {
    if (positionals.length > 1) throw new CliUsageError(`unexpected argument "${positionals[1]}": ${command} takes one MODEL (edge-llm ${command} --help)`);
    if (parsed.model !== undefined && parsed.model !== positionals[0]) {
      throw new CliUsageError(`the model is given twice: "${positionals[0]}" and --model "${parsed.model}"`);
    }
    parsed.model = positionals[0];
  }
  if (command === 'pull' && parsed.model === undefined) throw new CliUsageError('pull needs a MODEL: a Hugging Face id (owner/repo, owner/repo:QUANT or owner/repo/file.gguf)');
  return parsed;
}
