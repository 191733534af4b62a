// The executor's wiring stays untangled: no import cycle anywhere in src/ (type-only imports
// count too: a cycle of types is a cycle of ideas), no import in src/executor/ that climbs the
// layer order (src/executor/layers.json, which the lint reads too), and an agent kind cannot start
// a process around the run's sandbox (the lint refuses node:child_process and the spawner under agents/).

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
        const targets = [
          ...text.matchAll(/\b(?:import|export)\s[^;]*?\bfrom\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/gs)
        ].map(match => resolve(dirname(path), (match[1] ?? match[2])!.replace(/\.js$/, '.ts')));
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

/** The executor's layer order: floors bottom-up, each a list of rooms (a folder, or a file lower than its folder). */
const LAYERS = JSON.parse(readFileSync(resolve('src/executor/layers.json'), 'utf8')) as {
  floors: string[][];
};

/** The room of `file` (relative to the root) and its floor: the longest entry naming it or a folder holding it. */
function roomOf(file: string, floors: string[][]): { room: string; floor: number } | undefined {
  let found: { room: string; floor: number } | undefined;
  floors.forEach((rooms, floor) => {
    for (const room of rooms) {
      const holds = room.endsWith('.ts') ? file === room : file.startsWith(`${room}/`);
      if (holds && (!found || room.length > found.room.length)) found = { room, floor };
    }
  });
  return found;
}

/**
 * What breaks the layer order of `root`: each import from a room to another room on its own floor or
 * above (`a.ts -> b.ts (a floor 2, b floor 5)`), and each file no room holds (`no room: c.ts`).
 */
function layerProblems(root: string, floors: string[][]): string[] {
  const problems: string[] = [];
  for (const [path, targets] of importGraph(root)) {
    const file = relative(root, path);
    const from = roomOf(file, floors);
    if (!from) {
      problems.push(`no room: ${file}`);
      continue;
    }
    for (const target of targets) {
      const to = roomOf(relative(root, target), floors);
      if (!to || to.room === from.room || to.floor < from.floor) continue;
      problems.push(
        `${file} -> ${relative(root, target)} (${from.room} floor ${from.floor + 1}, ${to.room} floor ${to.floor + 1})`
      );
    }
  }
  return problems.sort();
}

describe('the layer order', () => {
  it('finds an import that climbs, one between rooms of a floor, and a file in no room', () => {
    const dir = tempDir('layers-');
    for (const room of ['store', 'config', 'worker', 'server']) mkdirSync(join(dir, room));
    const floors = [['store'], ['config/reader.ts'], ['config'], ['worker', 'server']];
    writeFileSync(join(dir, 'config', 'reader.ts'), 'export const r = 1;\n');
    writeFileSync(
      join(dir, 'config', 'config.ts'),
      "import { r } from './reader.js';\nexport const c = r;\n"
    );
    writeFileSync(
      join(dir, 'store', 'sql.ts'),
      "import type { c } from '../config/config.js';\nexport const s = 1;\n"
    );
    writeFileSync(
      join(dir, 'worker', 'pool.ts'),
      "import { s } from '../store/sql.js';\nexport const p = s;\n"
    );
    writeFileSync(join(dir, 'server', 'app.ts'), "export const a = import('../worker/pool.js');\n");
    writeFileSync(join(dir, 'loose.ts'), 'export const l = 1;\n');
    expect(layerProblems(dir, floors)).toEqual([
      'no room: loose.ts',
      'server/app.ts -> worker/pool.ts (server floor 4, worker floor 4)',
      'store/sql.ts -> config/config.ts (store floor 1, config floor 3)'
    ]);
  });

  it('src/executor/ keeps it: every file in a room, every import going down', () => {
    expect(layerProblems(resolve('src/executor'), LAYERS.floors)).toEqual([]);
  });

  it('the lint reads the same table: it refuses an import that climbs and lets one go down', () => {
    const lint = (file: string, text: string) =>
      spawnSync(
        process.execPath,
        [resolve('node_modules/eslint/bin/eslint.js'), '--stdin', '--stdin-filename', file],
        { input: text, encoding: 'utf8' }
      );
    const climbing = lint('src/executor/store/probe.ts', "export { WorkerPool } from '../worker/pool.js';\n");
    expect(climbing.status).toBe(1);
    expect(climbing.stdout).toMatch(/store is on floor 3 and worker on floor 9/);
    const across = lint('src/executor/server/probe.ts', "export { WorkerPool } from '../worker/pool.js';\n");
    expect(across.status).toBe(1);
    expect(across.stdout).toMatch(/server is on floor 9 and worker on floor 9/);
    const down = lint(
      'src/executor/agents/probe.ts',
      "export { show } from '../values/config-reader.js';\nexport type { Stores } from '../store/types.js';\n"
    );
    expect(down.stdout).toBe('');
    expect(down.status).toBe(0);
  });

  it('names each room once, and each folder room exists', () => {
    const rooms = LAYERS.floors.flat();
    expect(new Set(rooms).size).toBe(rooms.length);
    for (const room of rooms)
      expect(statSync(resolve('src/executor', room)).isDirectory()).toBe(!room.endsWith('.ts'));
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
