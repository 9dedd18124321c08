import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, found from this module whether it runs from src/ (tsx) or dist/src/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + dir);
    dir = up;
  }
  return dir;
}

export const ROOT = packageRoot();
const cache = new Map<string, string>();

/** Text of a shipped asset, e.g. asset('templates/prompts/system.md'). */
export function asset(rel: string): string {
  let text = cache.get(rel);
  if (text === undefined) {
    text = readFileSync(join(ROOT, rel), 'utf8');
    cache.set(rel, text);
  }
  return text;
}
