// The executor's wiring stays untangled: no import cycle anywhere in src/ (type-only imports
// count too: a cycle of types is a cycle of ideas), and an agent kind cannot start a process
// around the run's sandbox (the lint refuses node:child_process and the spawner under agents/).

import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { tempDir } from '../support/executor.js';

/** Every .ts file under `root`, with the files of `root` it imports (relative imports and re-exports). */
function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) {
        const text = readFileSync(path, 'utf8');
        const targets = [...text.matchAll(/\b(?:import|export)\s[^;]*?\bfrom\s+'(\.[^']+)'/gs)].map(match =>
          resolve(dirname(path), match[1]!.replace(/\.js$/, '.ts'))
        );
        graph.set(path, targets);
      }
    }
  };
  walk(root);
  return graph;
}

/** The import cycles of `root`: each a sorted list of files (relative to root) that reach each other. */
function importCycles(root: string): string[][] {
  const graph = importGraph(root);
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, order.get(next)!));
    }
    if (low.get(file) !== order.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(relative(root, member));
    } while (member !== file);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return cycles;
}

describe('import cycles', () => {
  it('finds a cycle, type-only imports included (so that the check of src/ can fail)', () => {
    const dir = tempDir('cycles-');
    mkdirSync(join(dir, 'agents'));
    writeFileSync(
      join(dir, 'config.ts'),
      "import { kinds } from './agents/index.js';\nexport const c = kinds;\n"
    );
    writeFileSync(
      join(dir, 'agents', 'index.ts'),
      "import type { C } from '../types.js';\nexport const kinds: C[] = [];\n"
    );
    writeFileSync(join(dir, 'types.ts'), "export type { c as C } from './config.js';\n");
    writeFileSync(join(dir, 'alone.ts'), "import { c } from './config.js';\nexport const a = c;\n");
    expect(importCycles(dir)).toEqual([['agents/index.ts', 'config.ts', 'types.ts']]);
  });

  it('src/ has none', () => {
    expect(importCycles(resolve('src'))).toEqual([]);
  });
});

describe('agent kinds start processes only through the sandbox', () => {
  const lint = (text: string) =>
    spawnSync(
      process.execPath,
      [
        resolve('node_modules/eslint/bin/eslint.js'),
        '--stdin',
        '--stdin-filename',
        'src/executor/agents/probe.ts'
      ],
      { input: text, encoding: 'utf8' }
    );

  it('the lint refuses node:child_process and the spawner in an agent kind', () => {
    const spawning = lint("import { spawn } from 'node:child_process';\nexport const run = spawn;\n");
    expect(spawning.status).toBe(1);
    expect(spawning.stdout).toMatch(/'node:child_process' import is restricted/);
    const spawner = lint(
      "import { RunProcesses } from '../sandbox/spawn.js';\nexport const run = RunProcesses;\n"
    );
    expect(spawner.status).toBe(1);
    expect(spawner.stdout).toMatch(/'\.\.\/sandbox\/spawn\.js' import is restricted/);
  });

  it('the lint lets a kind use the processes its context hands it', () => {
    const typed = lint(
      "import type { Processes } from '../sandbox/spawn.js';\nexport const run = (p: Processes) => p.shell('true', { env: {} });\n"
    );
    expect(typed.stdout).toBe('');
    expect(typed.status).toBe(0);
  });
});
