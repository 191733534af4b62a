// The configuration reference of docs/configuration.md is the one the schema generates, and it
// documents every key the page's example sets.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { parse as parseYaml } from 'yaml';
import {
  REFERENCE_END,
  REFERENCE_START,
  configurationReference,
  withReference
} from '../../src/executor/config/reference.js';

const page = readFileSync(resolve('docs/configuration.md'), 'utf8');

/** Every key path a parsed YAML value sets: `server.host`, `environments[].sandbox.memory`, … */
function keyPaths(value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return value.flatMap(item => keyPaths(item, `${at}[]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => {
    const path = at ? `${at}.${key}` : key;
    return [path, ...keyPaths(inner, path)];
  });
}

describe('docs/configuration.md', () => {
  it('holds the reference the schema generates', () => {
    expect(page).toContain(REFERENCE_START);
    expect(page).toContain(REFERENCE_END);
    const stale = withReference(page) !== page;
    if (stale)
      throw new Error(
        'docs/configuration.md: the configuration reference differs from what the schema generates; run `npm run docs:config`'
      );
  });

  it("documents every key of the page's example, with a description", () => {
    const example = /```yaml\n([\s\S]*?)```/.exec(page)![1]!;
    const reference = configurationReference();
    const missing = keyPaths(parseYaml(example))
      .filter(path => !path.includes('.claims.'))
      .filter(
        path =>
          !new RegExp(`^\\| \`${path.replace(/[.[\]]/g, '\\$&')}\` \\|.*\\| [^|]+ \\|$`, 'm').test(reference)
      );
    expect(missing).toEqual([]);
  });

  it('keeps its lines short and the page under 400 lines', () => {
    const lines = page.split('\n');
    expect(lines.length).toBeLessThanOrEqual(400);
    expect(lines.filter(line => line.length > 400)).toEqual([]);
  });
});
