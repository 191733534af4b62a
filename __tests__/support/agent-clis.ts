// The real agent CLIs the harness tests run, at pinned versions. Together they weigh close to a
// gigabyte, so they stay out of `npm ci` (which the demo runs): the first test that needs one
// installs it from the npm registry into a cache outside node_modules, and later runs reuse it.
// The cache is world-readable (a run's processes are an unprivileged user and must execute it):
// AGENT_RUN_CLI_CACHE, else /var/tmp/agent-run-clis.

import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export const AGENT_CLIS = {
  'claude-code': { pkg: '@anthropic-ai/claude-code', version: '2.1.331', bin: 'claude' },
  codex: { pkg: '@openai/codex', version: '0.169.0', bin: 'codex' },
  gemini: { pkg: '@google/gemini-cli', version: '0.61.0', bin: 'gemini' }
} as const;

export type AgentCli = keyof typeof AGENT_CLIS;

export function cliCacheDir(): string {
  return process.env.AGENT_RUN_CLI_CACHE ?? '/var/tmp/agent-run-clis';
}

/** The folder a pinned CLI is installed into (its package under `node_modules/`). */
export function cliPrefix(name: AgentCli): string {
  const { pkg, version } = AGENT_CLIS[name];
  return join(cliCacheDir(), `${pkg.replace('/', '+')}@${version}`);
}

/**
 * The absolute path of the pinned CLI's program, installing it first when the cache lacks it. An
 * install goes to a fresh folder renamed into place when complete, so parallel test files and an
 * interrupted install never leave a half-installed CLI behind.
 */
export async function installCli(name: AgentCli): Promise<string> {
  const { pkg, version, bin } = AGENT_CLIS[name];
  const prefix = cliPrefix(name);
  const program = join(prefix, 'node_modules', '.bin', bin);
  if (existsSync(program)) return program;
  mkdirSync(cliCacheDir(), { recursive: true, mode: 0o755 });
  const staging = `${prefix}.installing-${process.pid}-${Date.now()}`;
  mkdirSync(staging, { recursive: true, mode: 0o755 });
  try {
    await exec(
      'npm',
      [
        'install',
        '--prefix',
        staging,
        '--no-save',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        `${pkg}@${version}`
      ],
      { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60 * 1000 }
    );
    await exec('chmod', ['-R', 'a+rX', staging]);
    if (!existsSync(program)) renameSync(staging, prefix);
  } catch (error) {
    // Another test file may have finished the same install first: its copy is as good.
    if (existsSync(program)) return program;
    throw new Error(
      `could not install ${pkg}@${version} into ${staging}: ${(error as Error).message.slice(0, 2000)}`
    );
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (!existsSync(program)) throw new Error(`${pkg}@${version} installed, but ${program} is missing`);
  return program;
}
