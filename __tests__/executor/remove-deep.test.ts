// What a run leaves (its workspace, its own layer, its HOME) is removed by the workspace sweep once
// retained long enough. The run chooses the shape of those trees: one nested deeper than the
// process's open-file limit (a run's agent makes it with relative mkdir/chdir, 1,500 levels under
// the usual limit of 1,024) made Node's recursive rmSync throw EMFILE, and the sweep stopped at it
// every time: nothing after it was removed again (HOMEs hold the CLI's secrets), and the disk filled.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sweepWorkspaces } from '../../src/executor/workspace/workspace.js';
import { tempDir } from '../support/executor.js';

/** Directories nested `depth` deep under `dir`, made as a run's agent makes them (relative chdir). */
function nest(dir: string, depth: number): void {
  const script = `import os\nos.chdir(${JSON.stringify(dir)})\nfor _ in range(${depth}):\n    os.mkdir('d')\n    os.chdir('d')\nopen('leaf', 'w').write('x')\n`;
  execFileSync('python3', ['-c', script]);
}

describe('the workspace sweep', () => {
  it('removes trees nested deeper than the open-file limit, and goes on to the next ones', () => {
    const dataDir = join(tempDir('remove-deep-'), 'data');
    // Past this process's own limit (what the executor would have): 2,000 more than it.
    const limit = Number(execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
    const depth = (Number.isFinite(limit) ? Math.min(limit, 60_000) : 1024) + 2000;
    const runs = ['a-deep', 'b-plain'];
    for (const run of runs) {
      for (const part of ['workspaces', 'homes', 'layers']) {
        const dir = join(dataDir, part, run);
        mkdirSync(join(dir, 'upper'), { recursive: true });
        writeFileSync(join(dir, 'secret.txt'), 'a CLI credential\n');
        if (run === 'a-deep') nest(part === 'layers' ? join(dir, 'upper') : dir, depth);
      }
      const old = new Date(Date.now() - 3_600_000);
      utimesSync(join(dataDir, 'workspaces', run), old, old);
    }
    return sweepWorkspaces(dataDir, [], 60_000, new Set()).then(removed => {
      expect(removed).toBe(2);
      for (const run of runs)
        for (const part of ['workspaces', 'homes', 'layers'])
          expect([part, run, existsSync(join(dataDir, part, run))]).toEqual([part, run, false]);
    });
  }, 120_000);
});
