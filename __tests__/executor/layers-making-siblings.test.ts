// Several executor processes may share one data dir. A shared checkout or a setup layer another
// live process is making (`<name>.making-<its pid>`) is its build in progress: a sweep here must
// leave it alone, and remove it only once that process is gone.

import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sweepLayers } from '../../src/executor/workspace/layers.js';
import { tempDir } from '../support/executor.js';

describe("a sweep of shared checkouts and setup layers beside another process's builds", () => {
  it("leaves a live sibling process's half-made checkout and setup layer alone, removes a dead one's", async () => {
    const dataDir = join(tempDir('layers-siblings-'), 'data');
    const sibling = spawn(process.execPath, ['-e', 'process.stdin.resume()'], {
      stdio: ['pipe', 'ignore', 'ignore']
    });
    await once(sibling, 'spawn');
    const checkout = join(dataDir, 'checkouts', `${'c'.repeat(40)}.making-${sibling.pid}`);
    const setup = join(dataDir, 'setups', `${'s'.repeat(40)}.making-${sibling.pid}`);
    for (const dir of [checkout, setup]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'half'), 'being made\n');
    }
    try {
      await sweepLayers(dataDir, 0, new Set());
      expect(existsSync(join(checkout, 'half'))).toBe(true);
      expect(existsSync(join(setup, 'half'))).toBe(true);
      // Once that process is gone, its folders are leftovers.
      sibling.stdin!.end();
      await once(sibling, 'exit');
      await sweepLayers(dataDir, 0, new Set());
      expect(existsSync(checkout)).toBe(false);
      expect(existsSync(setup)).toBe(false);
    } finally {
      sibling.kill();
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    }
  });
});
