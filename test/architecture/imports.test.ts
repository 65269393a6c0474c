/**
 * The house's shape, read from src/'s own imports (the TypeScript compiler's parser, so
 * type-only imports, re-exports and import() count as the arrows they are):
 * - no circles: no file reaches itself through its imports;
 * - every folder of src/ stands on a floor, and no import climbs one: the layers of
 *   docs/architecture.md ("http → protocol/engine → sampling/tokenizer", the homes on top,
 *   the shared ground at the bottom) only import downwards;
 * - no two folders import each other, but the ties named in TWO_WAY_TIES with their reason.
 * docs/architecture.md draws the same floors in its folder table.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { FLOORS } from './floors.js';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/**
 * Folder pairs allowed to import each other, with the reason. The media decoding thread
 * (media/media-decode-worker.ts) runs a vision or audio model's preprocessing beside the
 * decoders, so the one thread entry that composes the two imports multimodal, while
 * multimodal's processors take media's decoded types.
 */
const TWO_WAY_TIES: readonly string[] = ['media <-> multimodal'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx)$/.test(entry.name) ? [path] : [];
  });
}

/** Every module a file names: import/export ... from, import(), import('...') types. */
function moduleSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) found.push(argument.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The src file a relative specifier names (ESM style: './x.js' is x.ts), or null outside src. */
function resolveImport(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.(js|ts)$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.tsx`, `${stem}.d.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && candidate.startsWith(SRC)) return candidate;
  }
  return null;
}

/** src-relative file -> the src-relative files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const targets = moduleSpecifiers(file)
      .map((specifier) => resolveImport(file, specifier))
      .filter((target): target is string => target !== null)
      .map((target) => relative(SRC, target));
    graph.set(relative(SRC, file), [...new Set(targets)]);
  }
  return graph;
}

/** Strongly connected components of more than one file, or of one that imports itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) connect(file);
  return found;
}

const folderOf = (file: string) => file.split('/')[0];
const floorOf = (folder: string) => FLOORS.findIndex((floor) => floor.includes(folder));

describe('src/ import structure', () => {
  const graph = importGraph();

  it('reads the imports it checks', () => {
    // A parser or resolver that found nothing would pass the checks below vacuously.
    expect(graph.size).toBeGreaterThan(250);
    expect(graph.get('http/app.ts')).toContain('engine/types.ts');
    expect(graph.get('guided/xgrammar-runtime.ts')).toContain('guided/xgrammar-node-loader.ts');
  });

  it('has no import circles', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('has no import that climbs a floor', () => {
    const climbs: string[] = [];
    for (const [file, targets] of graph) {
      const from = floorOf(folderOf(file));
      for (const target of targets) {
        const to = floorOf(folderOf(target));
        // Only the command line (the process entry, src/cli/) runs a home.
        const intoRuntime = folderOf(target) === 'runtime' && folderOf(file) !== 'runtime' && folderOf(file) !== 'cli';
        if (intoRuntime || (from >= 0 && to >= 0 && to < from)) climbs.push(`${file} -> ${target}`);
      }
    }
    expect(climbs).toEqual([]);
  });

  it('places every folder of src/ on a floor', () => {
    const folders = new Set([...graph.keys()].map(folderOf));
    expect([...folders].filter((folder) => folder.endsWith('.ts') || floorOf(folder) < 0)).toEqual([]);
  });

  it('has no two folders that import each other, but the named ties', () => {
    const pairs = new Set<string>();
    for (const [file, targets] of graph) for (const target of targets) if (folderOf(file) !== folderOf(target)) pairs.add(`${folderOf(file)} -> ${folderOf(target)}`);
    const ties = [...pairs]
      .map((pair) => pair.split(' -> '))
      .filter(([from, to]) => from < to && pairs.has(`${to} -> ${from}`))
      .map(([from, to]) => `${from} <-> ${to}`);
    expect(ties).toEqual(TWO_WAY_TIES);
  });

  it('finds a circle and a climb when there is one', () => {
    const looped = new Map([
      ['engine/a.ts', ['engine/b.ts']],
      ['engine/b.ts', ['engine/a.ts']],
      ['engine/c.ts', ['engine/a.ts']],
    ]);
    expect(circles(looped)).toEqual([['engine/a.ts', 'engine/b.ts']]);
    expect(floorOf('sampling')).toBeGreaterThan(floorOf('engine'));
  });
});
