// `npm run lint` after the README's quick start in the repository: the executor's data dir
// (.agent-executor/, full worktrees of other code) must not be linted. Runs the repository's own
// lint commands (package.json "lint") on a temp copy of its lint configuration.
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../support/executor.js';

const run = promisify(execFile);
const ROOT = resolve('.');
const BAD_TS = 'const unused = 1 ;\nlet x: any = "not prettier"\n';

/** A temp project with the repository's lint set-up and one clean source file. */
function lintProject(): string {
  const dir = tempDir('agent-run-lint-');
  for (const file of [
    'eslint.config.js',
    '.gitignore',
    '.prettierignore',
    'package.json',
    '.prettierrc.json',
    'src/executor/layers.json'
  ])
    try {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      copyFileSync(join(ROOT, file), join(dir, file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src', 'ok.ts'), "export const ok = 'fine';\n");
  return dir;
}

async function lint(dir: string): Promise<{ code: number; output: string }> {
  const script = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.lint as string;
  const PATH = [join(ROOT, 'node_modules', '.bin'), dirname(process.execPath), process.env.PATH].join(
    delimiter
  );
  try {
    const { stdout, stderr } = await run('sh', ['-c', script], { cwd: dir, env: { ...process.env, PATH } });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('npm run lint', () => {
  it('ignores what .gitignore ignores, such as an executor data dir in the repository', async () => {
    const dir = lintProject();
    mkdirSync(join(dir, '.agent-executor', 'workspaces', 'run_1'), { recursive: true });
    writeFileSync(join(dir, '.agent-executor', 'workspaces', 'run_1', 'bad.ts'), BAD_TS);
    const result = await lint(dir);
    expect(result.output).not.toContain('bad.ts');
    expect(result.code).toBe(0);
  }, 120_000);

  it('still fails on the same bad file outside ignored folders', async () => {
    const dir = lintProject();
    writeFileSync(join(dir, 'src', 'bad.ts'), BAD_TS);
    const result = await lint(dir);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('bad.ts');
  }, 120_000);
});
