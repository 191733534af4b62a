// Start-up checks of a worker's environments: configuration every run would fail on is refused
// before the executor listens, each refusal naming the environment, the key, the value and the
// expected form; what can work passes. Real directories, real programs on a real PATH. A path the
// user gave is shown whole (up to MAX_SHOWN_PATH), however long the machine's temp dir is.
import { afterAll, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, parseConfig } from '../../src/executor/config/config.js';
import { environmentProblems } from '../../src/executor/node/startup.js';
import { MAX_SHOWN_PATH } from '../../src/executor/values/config-reader.js';
import { tempDir as madeTempDir } from '../support/executor.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new temp dir, removed when the file is done. */
function tempDir(prefix: string): string {
  const dir = madeTempDir(prefix);
  made.push(dir);
  return dir;
}

const PATH = { PATH: '/usr/bin:/bin' };

function problems(environment: Record<string, unknown>, env: NodeJS.ProcessEnv = PATH): string[] {
  const dir = tempDir('preflight-');
  const config = parseConfig({ environments: [{ id: 'web', ...environment }] }, dir);
  return environmentProblems(config.environments[0]!, env);
}

const FORMS = 'expected a directory, an https://, http://, ssh://, git:// or file:// URL, or user@host:path';

describe('start-up checks of environments', () => {
  it('refuses a source directory that does not exist', () => {
    const dir = tempDir('preflight-');
    const config = parseConfig({ environments: [{ id: 'web', source: 'no-such-dir' }] }, dir);
    expect(environmentProblems(config.environments[0]!, PATH)).toEqual([
      `environment "web": source ${JSON.stringify(join(dir, 'no-such-dir'))}: no such directory; ${FORMS}`
    ]);
  });

  it('shows a long source path whole, past the 60 characters a value is cut at', () => {
    const dir = tempDir('preflight-');
    const long = join(dir, 'a-folder-whose-name-alone-is-longer-than-sixty-characters-by-a-margin', 'web');
    const config = parseConfig({ environments: [{ id: 'web', source: long }] }, dir);
    expect(environmentProblems(config.environments[0]!, PATH)).toEqual([
      `environment "web": source ${JSON.stringify(long)}: no such directory; ${FORMS}`
    ]);
    // Past the generous bound, the path is cut with an ellipsis rather than filling the log.
    const huge = `/${'x'.repeat(MAX_SHOWN_PATH + 100)}`;
    const cut = parseConfig({ environments: [{ id: 'web', source: huge }] }, dir);
    expect(environmentProblems(cut.environments[0]!, PATH)).toEqual([
      `environment "web": source ${JSON.stringify(`${huge.slice(0, MAX_SHOWN_PATH)}…`)}: no such directory; ${FORMS}`
    ]);
  });

  it('refuses a misspelt URL scheme, without the credentials the URL carries', () => {
    expect(problems({ source: 'htps://deploy:s3cr3t@github.com/acme/web.git' })).toEqual([
      `environment "web": source "htps://***@github.com/acme/web.git": htps:// is not a scheme git fetches from; ${FORMS}`
    ]);
  });

  it('accepts every form git fetches from; an unreachable remote is not checked here', () => {
    for (const source of [
      'https://127.0.0.1:9/repo.git',
      'http://example.invalid/repo.git',
      'ssh://git@example.invalid/repo.git',
      'git://example.invalid/repo.git',
      'file:///nowhere/repo.git',
      'git@example.invalid:acme/web.git'
    ])
      expect(problems({ source })).toEqual([]);
  });

  it('refuses a command agent whose program is not on the PATH the run will have', () => {
    expect(problems({ agent: { kind: 'command', command: ['claude-typo', '-p'] } })).toEqual([
      'environment "web": agent.command "claude-typo": not found on the PATH runs get (/usr/bin:/bin); ' +
        'expected a program on that PATH or an absolute path'
    ]);
    expect(problems({ agent: { kind: 'command', command: ['sh', '-c', 'true'] } })).toEqual([]);
    // The run's PATH is the executor's: a program only on another PATH is refused.
    const bin = tempDir('preflight-bin-');
    writeFileSync(join(bin, 'my-agent'), '#!/bin/sh\n');
    chmodSync(join(bin, 'my-agent'), 0o755);
    expect(problems({ agent: { kind: 'command', command: ['my-agent'] } })).toHaveLength(1);
    expect(problems({ agent: { kind: 'command', command: ['my-agent'] } }, { PATH: `${bin}:/bin` })).toEqual(
      []
    );
    expect(problems({ agent: { kind: 'command', command: [join(bin, 'my-agent')] } })).toEqual([]);
    expect(problems({ agent: { kind: 'command', command: [join(bin, 'nothing')] } })).toEqual([
      `environment "web": agent.command ${JSON.stringify(join(bin, 'nothing'))}: no executable file at ` +
        `${join(bin, 'nothing')}; expected the path of an executable program`
    ]);
  });

  it('finds a relative program path in the source the workspace is made from', () => {
    const source = tempDir('preflight-src-');
    mkdirSync(join(source, 'scripts'));
    writeFileSync(join(source, 'scripts', 'agent.sh'), '#!/bin/sh\n');
    chmodSync(join(source, 'scripts', 'agent.sh'), 0o755);
    expect(problems({ source, agent: { kind: 'command', command: ['./scripts/agent.sh'] } })).toEqual([]);
    expect(problems({ source, agent: { kind: 'command', command: ['./scripts/other.sh'] } })).toHaveLength(1);
  });

  it('refuses an env variable that is not set in the executor environment', () => {
    expect(problems({ env: ['ANTHROPIC_API_KEY', 'SET_ONE'] }, { ...PATH, SET_ONE: 'x' })).toEqual([
      `environment "web": env "ANTHROPIC_API_KEY": not set in the executor's environment; expected it exported ` +
        'before agent-executor starts, or removed from env'
    ]);
  });
});

describe('sizes', () => {
  it('refuses decimal units and suggests the binary one', () => {
    for (const [quota, suggestion] of [
      ['2GB', '2GiB'],
      ['2MB', '2MiB'],
      ['2KB', '2KiB'],
      ['2TB', '2TiB'],
      ['1.5 gb', '1.5GiB']
    ]) {
      expect(() => parseConfig({ workspaces: { quota } }, tempDir('preflight-'))).toThrow(ConfigError);
      expect(() => parseConfig({ workspaces: { quota } }, tempDir('preflight-'))).toThrow(
        `workspaces.quota ${JSON.stringify(quota)}: `
      );
      expect(() => parseConfig({ workspaces: { quota } }, tempDir('preflight-'))).toThrow(
        `write ${suggestion}`
      );
    }
  });

  it('accepts binary units and plain bytes', () => {
    const quota = (value: string) =>
      parseConfig({ workspaces: { quota: value } }, tempDir('preflight-')).workspaces.quotaBytes;
    expect(quota('2GiB')).toBe(2 * 1024 ** 3);
    expect(quota('500MiB')).toBe(500 * 1024 ** 2);
    expect(quota('200KiB')).toBe(200 * 1024);
    expect(quota('1TiB')).toBe(1024 ** 4);
    expect(quota('4096')).toBe(4096);
    expect(quota('4096B')).toBe(4096);
  });
});
