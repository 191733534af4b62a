// The README and docs/ tell the truth: every input, output and error code is documented.
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { parse } from 'yaml';
import { ERROR_CODES } from '../../src/api/error-codes.js';

// The short README and its topic pages, read as one text.
const readme = [
  'README.md',
  ...readdirSync('docs')
    .filter(name => name.endsWith('.md'))
    .map(name => `docs/${name}`)
]
  .map(file => readFileSync(file, 'utf8'))
  .join('\n');
const action = parse(readFileSync('action.yml', 'utf8')) as {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, unknown>;
  runs: Record<string, string>;
};

describe('README', () => {
  it('documents every input of action.yml with its default', () => {
    for (const [name, input] of Object.entries(action.inputs)) {
      const row = readme.split('\n').find(line => line.startsWith(`| \`${name}\` |`));
      expect(row).toBeDefined();
      if (input.default !== undefined) expect(row).toContain(`\`${input.default}\``);
    }
  });

  it('documents every output of action.yml', () => {
    for (const name of Object.keys(action.outputs)) expect(readme).toContain(`| \`${name}\` |`);
  });

  it('lists every error code of the error reference', () => {
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      expect(readme).toContain(
        `| \`${code}\` | ${info.status ?? 'run'} | ${info.retryable ? 'yes' : 'no'} | ${info.meaning} |`
      );
    }
  });

  it('runs on node24 with a post step', () => {
    expect(action.runs).toEqual({
      using: 'node24',
      main: 'dist/index.js',
      post: 'dist/index.js',
      'post-if': 'always()'
    });
  });
});

describe('docs/architecture.md', () => {
  it('lists the rooms on the floors of src/executor/layers.json, the table the lint reads', () => {
    const { floors } = JSON.parse(readFileSync('src/executor/layers.json', 'utf8')) as { floors: string[][] };
    const table = floors.flatMap((names, floor) => names.map(name => `${floor + 1} ${name}`));
    const rows = readFileSync('docs/architecture.md', 'utf8')
      .split('\n')
      .map(line => /^\| (\d+) \| `([^`]+?)\/?` /.exec(line))
      .filter(match => match !== null)
      .map(match => `${match[1]} ${match[2]}`);
    expect(rows).toEqual(table);
  });
});
