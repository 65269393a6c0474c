/** `edge-llm --help`, generated from the settings' schema (flags.ts): one line per flag, grouped as docs/configuration.md is. */
import { DEFAULT_SERVER_CONFIG } from '../config/server-config.js';
import { SETTING_GROUPS, valueNameOf } from '../config/setting-surface.js';
import { VERSION } from '../common/version.js';
import { CLI_GROUP, SERVE_OPTIONS, SETTING_FLAGS } from './flags.js';

const HELP_COLUMN = 34;

function line(left: string, right: string): string {
  const pad = left.length + 2 >= HELP_COLUMN ? `\n${' '.repeat(HELP_COLUMN)}` : ' '.repeat(HELP_COLUMN - left.length);
  return `${left}${pad}${right}`;
}

function defaultText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return value.length === 0 ? '' : ` (default ${value.join(',')})`;
  return ` (default ${String(value)})`;
}

/** The flag lines of `serve`, by group. */
export function serveFlagsHelp(): string {
  const groups = new Map<string, string[]>();
  const add = (group: string, text: string) => groups.set(group, [...(groups.get(group) ?? []), text]);
  for (const { key, surface } of SETTING_FLAGS) {
    const valueName = valueNameOf(surface);
    const spellings = [`--${surface.flag}`, ...(surface.aliases ?? [])].join(', ');
    const left = `  ${spellings}${valueName ? ` ${valueName}` : ''}${surface.text === 'bool' ? `, --no-${surface.flag}` : ''}`;
    const defaults = surface.secret || surface.help.includes('(default') ? '' : defaultText((DEFAULT_SERVER_CONFIG as Record<string, unknown>)[key]);
    const env = surface.env.length > 0 ? ` [env ${surface.env.join(', ')}]` : '';
    const negation = surface.negation ? ` (--${surface.negation}: off)` : '';
    add(surface.group, line(left, `${surface.help}${defaults}${negation}${env}`));
  }
  for (const option of SERVE_OPTIONS) add(option.group, line(`  --${option.flag}${option.valueName ? ` ${option.valueName}` : ''}`, option.help));
  const ordered = [...SETTING_GROUPS, CLI_GROUP].filter((group) => groups.has(group));
  return ordered.map((group) => `${group}:\n${groups.get(group)!.join('\n')}`).join('\n\n');
}

const MODEL_FORMS = `MODEL is one of:
  a folder in the Hugging Face ONNX layout    /models/SmolLM2-135M-Instruct --dtype q4
  a .gguf file                                /models/qwen2.5-0.5b-instruct-q4_k_m.gguf
  a Hugging Face id (fetched into the HF cache, $HF_HOME/hub):
    an ONNX repo                              onnx-community/SmolLM2-135M-Instruct --dtype q4
    a GGUF repo and its quantization          owner/repo:Q4_K_M
    one file of a repo                        owner/repo/file.gguf
Without MODEL: the embedded model (models/stories260k).`;

export function mainHelp(): string {
  return `edge-llm ${VERSION}: an LLM inference server with vLLM's and MindIE's HTTP APIs, on onnxruntime.

Usage:
  edge-llm serve [MODEL] [flags]   serve MODEL over HTTP (the default command)
  edge-llm pull MODEL [--revision REV] [--dtype DTYPE]
                                   download a Hugging Face model into the HF cache, and stop
  edge-llm --help | --version

${MODEL_FORMS}

Precedence: flags > environment > config file (--config) > defaults.
Hugging Face: HF_TOKEN, HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_HUB_OFFLINE=1.

${serveFlagsHelp()}

Every setting, its environment variable and its vLLM counterpart: docs/configuration.md.`;
}

export function serveHelp(): string {
  return `Usage: edge-llm serve [MODEL] [flags]

${MODEL_FORMS}

Precedence: flags > environment > config file (--config) > defaults.

${serveFlagsHelp()}`;
}

export function pullHelp(): string {
  return `Usage: edge-llm pull MODEL [--revision REV] [--dtype DTYPE]

Downloads a Hugging Face model into the Hugging Face cache ($HF_HOME/hub, as huggingface-cli
and transformers keep it), fetching only what serving it needs, and stops.
MODEL: owner/repo (an ONNX repo: --dtype picks the graph), owner/repo:QUANT (one .gguf),
owner/repo/file.gguf. Environment: HF_TOKEN, HF_HOME, HF_HUB_CACHE, HF_ENDPOINT.`;
}
