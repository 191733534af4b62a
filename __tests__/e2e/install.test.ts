// The package as a user without a clone gets it: `npm pack` in the checkout, then `npm install -g` of
// the tarball into a prefix of its own, and the two programs it puts on PATH. The tarball holds what
// users run and nothing else, the install pulls no dependency (the bundles carry theirs), and
// `agent-executor` serves on Node 24 and says what to install on an older one.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../support/executor.js';

const run = promisify(execFile);

let dir: string;
let prefix: string;
let tarball: string;
let packed: { files: { path: string }[]; entryCount: number; size: number };
let installLog: string;
/** PATH with the Node 24 the tests run on first, as after installing Node 24. */
let node24Path: string;

beforeAll(async () => {
  dir = tempDir('agent-run-install-');
  prefix = join(dir, 'prefix');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: resolve('.'),
    maxBuffer: 16 * 1024 * 1024
  });
  packed = (JSON.parse(stdout) as (typeof packed & { filename: string })[])[0]!;
  tarball = join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
  node24Path = [dirname(process.execPath), process.env.PATH].join(delimiter);
  const installed = await run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', tarball],
    { env: { ...process.env, PATH: node24Path }, maxBuffer: 16 * 1024 * 1024 }
  );
  installLog = installed.stdout + installed.stderr;
}, 600_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('packs only the bundles, action.yml, the README, the changelog, the docs and examples, the license and package.json', () => {
    const paths = packed.files.map(file => file.path);
    const outside = paths.filter(
      path =>
        !/^(dist|docs|examples)\//.test(path) &&
        !['action.yml', 'README.md', 'CHANGELOG.md', 'LICENSE', 'package.json'].includes(path)
    );
    expect(outside).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/cli/index.js',
        'dist/executor/index.js',
        'action.yml',
        'README.md',
        'CHANGELOG.md',
        'LICENSE',
        'docs/executor.md',
        'examples/events/pull_request.json',
        'examples/workflows/pr-review.yml'
      ])
    );
    expect(paths.some(path => /\.ts$/.test(path) || path.startsWith('__tests__/'))).toBe(false);
  });

  it('has a license file that matches the license field', () => {
    const { license } = JSON.parse(readFileSync('package.json', 'utf8')) as { license: string };
    expect(license).toBe('MIT');
    expect(readFileSync('LICENSE', 'utf8')).toMatch(/^MIT License\n/);
  });
});

describe('npm install -g of the tarball', () => {
  it('adds one package: no dependency is fetched', () => {
    expect(installLog).toMatch(/added 1 package\b/);
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'agent-run', 'node_modules'))).toBe(false);
  });

  it('puts agent-run on PATH, and its --help works', async () => {
    const { stdout } = await run(join(prefix, 'bin', 'agent-run'), ['--help'], {
      env: { ...process.env, PATH: node24Path }
    });
    expect(stdout).toMatch(/^Usage: agent-run COMMAND/);
  });

  it('puts agent-executor on PATH, and on Node 24 it serves', async () => {
    const cwd = tempDir('agent-run-install-serve-');
    let child: ChildProcess | undefined;
    try {
      child = spawn(join(prefix, 'bin', 'agent-executor'), ['serve', '--port', '0'], {
        cwd,
        env: { ...process.env, PATH: node24Path },
        stdio: ['ignore', 'pipe', 'pipe']
      });
      let output = '';
      const url = await new Promise<string>((resolveUrl, reject) => {
        child!.stdout!.on('data', chunk => {
          output += chunk;
          const match = /listening on (http:\/\/\S+)/.exec(output);
          if (match) resolveUrl(match[1]!);
        });
        child!.stderr!.on('data', chunk => (output += chunk));
        child!.on('exit', code => reject(new Error(`agent-executor exited with ${code}:\n${output}`)));
      });
      const response = await fetch(`${url}/healthz`);
      expect(response.status).toBeLessThan(500);
    } finally {
      if (child && child.exitCode === null) {
        const exited = new Promise(resolveExit => child!.on('exit', resolveExit));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);

  it('on an older Node, agent-executor says to install Node 24 instead of crashing', async () => {
    const old = '/usr/bin/node';
    const version = (await run(old, ['--version'])).stdout.trim();
    // The machine's own node is the older one the check needs; without it there is nothing to show.
    expect(Number(/^v(\d+)/.exec(version)?.[1])).toBeLessThan(24);
    const failed = await run(join(prefix, 'bin', 'agent-executor'), ['--help'], {
      env: { ...process.env, PATH: ['/usr/bin', '/bin'].join(delimiter) }
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toContain('agent-executor needs Node.js 24');
    expect((failed as { stderr: string }).stderr).toContain('install Node 24');
  });
});

describe('npm publish --dry-run', () => {
  it('passes', async () => {
    const { stdout, stderr } = await run('npm', ['publish', '--dry-run', '--ignore-scripts', tarball], {
      env: { ...process.env, PATH: node24Path },
      maxBuffer: 16 * 1024 * 1024
    });
    expect(stdout + stderr).toContain('+ agent-run@0.1.0');
    // The one warning a dry run gives on a machine with no npm login; nothing about the package.
    const warnings = stderr.split('\n').filter(line => /^npm (?:warn|error)/i.test(line));
    expect(warnings.filter(line => !/requires you to be logged in/.test(line))).toEqual([]);
  }, 120_000);
});
