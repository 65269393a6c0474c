/**
 * The code blocks of README.md and docs/*.md, with the `<!-- doc-test: ... -->` marker that
 * says how the doc tests treat each one (docs/development.md, "Docs that run", has the convention):
 *
 *   <!-- doc-test: run -->                              run it against the embedded-model server
 *   <!-- doc-test: run env="TOOL_CALL_PARSER=hermes" -->  ... against a server started with that env
 *   <!-- doc-test: run status="200 400" -->             the statuses its curls must get, in order
 *                                                         (one value: every curl; default: 2xx)
 *   <!-- doc-test: needs="a GPU" -->                    not run here: CI lacks what it names (counted)
 *
 * A `VAR=value ... npm start` line inside a block is the server the block needs: its
 * assignments join the marker's env, and the line itself is not run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');

export interface DocBlock {
  /** "docs/api.md:42": where the block's opening fence is. */
  where: string;
  info: string;
  code: string;
  marker?: { run: boolean; needs?: string; env: Record<string, string>; status?: string[] };
}

/** Markdown files of the book: README.md and docs/*.md. */
export function docFiles(): string[] {
  const docs = readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

const MARKER = /^<!--\s*doc-test:(.*?)-->\s*$/;
const ATTRIBUTE = /(\w+)(?:="([^"]*)")?/g;

function parseMarker(text: string, where: string): DocBlock['marker'] {
  const attributes = new Map<string, string>();
  for (const match of text.matchAll(ATTRIBUTE)) attributes.set(match[1]!, match[2] ?? '');
  const unknown = [...attributes.keys()].filter((key) => !['run', 'needs', 'env', 'status'].includes(key));
  if (unknown.length > 0) throw new Error(`${where}: unknown doc-test attribute(s) ${unknown.join(', ')}`);
  const run = attributes.has('run');
  const needs = attributes.get('needs');
  if (run === (needs !== undefined)) throw new Error(`${where}: a doc-test marker says either run or needs="..."`);
  if (needs !== undefined && needs.trim() === '') throw new Error(`${where}: needs="..." must say what CI lacks`);
  return {
    run,
    needs,
    env: parseAssignments(attributes.get('env') ?? ''),
    status: attributes.get('status')?.split(/\s+/).filter((s) => s !== ''),
  };
}

/** "A=1 B=two" → {A: "1", B: "two"}. */
export function parseAssignments(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    const at = word.indexOf('=');
    if (at <= 0) throw new Error(`"${word}" is not NAME=value`);
    env[word.slice(0, at)] = word.slice(at + 1);
  }
  return env;
}

export function docBlocks(file: string): DocBlock[] {
  const lines = readFileSync(join(REPO_ROOT, file), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(open[1]!.length));
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const where = `${file}:${start + 1}`;
    const markerText = before >= 0 ? MARKER.exec(lines[before]!.trim())?.[1] : undefined;
    blocks.push({ where, info: open[2]!, code: body.join('\n'), marker: markerText === undefined ? undefined : parseMarker(markerText, where) });
  }
  return blocks;
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console', '']);

/** A shell block that talks to a server or starts one: the doc tests must either run it or say why not. */
export function talksToServer(block: DocBlock): boolean {
  return SHELL.has(block.info) && /\bcurl\b|\bnpm start\b|\bnpm run dev\b|\bwrangler (dev|deploy)\b/.test(block.code);
}

/** `VAR=value ... npm start` (assignments only, then npm start). */
const START_LINE = /^((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)npm start\s*(?:#.*)?$/;

/** The block's server env (from its `npm start` line, if any) and the script without that line. */
export function splitServerStart(code: string): { env: Record<string, string>; script: string; startsServer: boolean } {
  let env: Record<string, string> = {};
  let startsServer = false;
  const script: string[] = [];
  for (const line of code.split('\n')) {
    const start = START_LINE.exec(line.trim());
    if (start) {
      if (startsServer) throw new Error('a runnable block may start one server');
      startsServer = true;
      env = parseAssignments(start[1]!);
    } else script.push(line);
  }
  return { env, script: script.join('\n'), startsServer };
}
