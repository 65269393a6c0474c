/**
 * The book's links hold: every relative link of README.md and docs/*.md names a file of the
 * repository, and every #anchor a heading of that page (as GitHub writes heading anchors).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docFiles, REPO_ROOT } from './doc-blocks.js';

/** GitHub's anchor for a heading: lower case, punctuation dropped (but - and _), spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Headings outside code blocks, as anchors (a repeated one gets -1, -2, ...). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence;
    const heading = !fence ? /^#{1,6} (.*)$/.exec(line) : null;
    if (!heading) continue;
    const base = slug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Markdown links outside code blocks and code spans. */
function links(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('links in README.md and docs/', () => {
  for (const doc of docFiles()) {
    it(`${doc}: every relative link and anchor resolves`, () => {
      const file = join(REPO_ROOT, doc);
      const broken: string[] = [];
      for (const link of links(file)) {
        if (/^[a-z]+:/i.test(link)) continue;
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? file : join(dirname(file), path);
        if (!existsSync(target)) broken.push(`${link} (no file ${relative(REPO_ROOT, target)})`);
        else if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor)) broken.push(`${link} (no heading)`);
      }
      expect(broken).toEqual([]);
    });
  }
});
