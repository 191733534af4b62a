// An executor whose Node lies in a folder its runs' user cannot enter, as in a clone under root's
// home or a `mktemp -d` folder (mode 700): Codex and Gemini are Node scripts the executor starts with
// its own Node, so their start-up check fails there. The check must name that cause and its fix,
// not tell the user to reinstall a CLI that is installed. The executor here is a child process on
// a copy of this test's Node placed in a mode-700 folder, checking an environment of the real,
// pinned Codex CLI.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, linkSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cliCacheDir, installCli } from '../support/agent-clis.js';
import { tempDir } from '../support/executor.js';
import { sourceNodeArgs, sourcePath } from '../support/source-child.js';
import { requireBubblewrap } from './support.js';

const run = promisify(execFile);

let root: string;
let privateDir: string;
let node: string;
let codex: string;

beforeAll(async () => {
  requireBubblewrap();
  codex = await installCli('codex');
  root = tempDir('private-clone-');
  chmodSync(root, 0o755); // only the clone is private
  privateDir = join(root, 'clone');
  mkdirSync(join(privateDir, 'bin'), { recursive: true });
  node = join(privateDir, 'bin', 'node');
  try {
    linkSync(process.execPath, node);
  } catch {
    copyFileSync(process.execPath, node);
  }
  chmodSync(privateDir, 0o700);
}, 900_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** The start-up check of the harness CLIs, as an executor on the private Node runs it. */
async function check(environment: Record<string, unknown>): Promise<{ notes: string[]; problems: string[] }> {
  const script = `
    import { parseConfig } from ${JSON.stringify(sourcePath('src/executor/config/config.ts'))};
    import { checkHarnessClis } from ${JSON.stringify(sourcePath('src/executor/node/harness-startup.ts'))};
    const config = parseConfig({ environments: [JSON.parse(process.argv[1])] }, process.cwd());
    process.stdout.write(JSON.stringify(checkHarnessClis(config.environments)));
  `;
  const { stdout } = await run(
    node,
    [...sourceNodeArgs(), '--input-type=module', '-e', script, JSON.stringify(environment)],
    { cwd: root, maxBuffer: 16 * 1024 * 1024 }
  );
  return JSON.parse(stdout) as { notes: string[]; problems: string[] };
}

describe('a codex environment of an executor whose Node is in a mode-700 folder', () => {
  it('is refused naming the folder the run user cannot enter and the fix, not a reinstall', async () => {
    const report = await check({
      id: 'codex',
      source: root,
      agent: { kind: 'codex', command: [codex] },
      sandbox: { read: [cliCacheDir()] }
    });
    expect(report.problems).toHaveLength(1);
    const problem = report.problems[0]!;
    expect(problem).toContain(`cannot enter ${privateDir} (mode 700, owner uid 0)`);
    expect(problem).toContain(`${privateDir}, where the Node this executor runs on (${node}) lives`);
    expect(problem).toContain(`chmod o+x ${privateDir}`);
    expect(problem).not.toContain('reinstall');
  }, 120_000);

  it('names the CLI, not node, in the note of an environment that runs', async () => {
    chmodSync(privateDir, 0o755);
    try {
      const report = await check({
        id: 'codex',
        source: root,
        agent: { kind: 'codex', command: [codex] },
        sandbox: { read: [cliCacheDir()] }
      });
      expect(report.problems).toEqual([]);
      expect(report.notes).toEqual([
        expect.stringMatching(
          new RegExp(
            `^environment "codex": codex CLI ${codex.replace(/[.+]/g, '\\$&')} \\(a Node script, run with ${node}\\) runs in its sandbox, version codex-cli 0\\.169\\.0$`
          )
        )
      ]);
    } finally {
      chmodSync(privateDir, 0o700);
    }
  }, 120_000);
});
