// Where a node's store is: --store, then AGENT_EXECUTOR_STORE, then the config file's store:, then
// SQLite in the data dir. Bad values name themselves (password hidden) and the forms expected.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/executor/config/config.js';
import { tempDir } from '../support/executor.js';

function withConfig(text: string): string {
  const dir = tempDir();
  mkdirSync(join(dir, 'conf'));
  writeFileSync(join(dir, 'conf', 'agent-executor.yaml'), text);
  return dir;
}

describe('store settings', () => {
  it('defaults to SQLite in the data dir, which --data-dir moves', () => {
    const dir = tempDir();
    expect(loadConfig({}, dir, {}).store).toEqual({
      kind: 'sqlite',
      path: join(dir, '.agent-executor', 'executor.db')
    });
    expect(loadConfig({ dataDir: 'elsewhere' }, dir, {}).store).toEqual({
      kind: 'sqlite',
      path: join(dir, 'elsewhere', 'executor.db')
    });
  });

  it("reads store: from the file (paths from the file's folder), then the variable, then --store", () => {
    const dir = withConfig('store: sqlite:db/runs.db\n');
    const config = join(dir, 'conf', 'agent-executor.yaml');
    expect(loadConfig({ config }, dir, {}).store).toEqual({
      kind: 'sqlite',
      path: join(dir, 'conf', 'db', 'runs.db')
    });
    const url = 'postgres://executor:s3cret@db.internal:5432/agents';
    expect(loadConfig({ config }, dir, { AGENT_EXECUTOR_STORE: url }).store).toEqual({
      kind: 'postgres',
      url
    });
    expect(loadConfig({ config, store: 'local.db' }, dir, { AGENT_EXECUTOR_STORE: url }).store).toEqual({
      kind: 'sqlite',
      path: join(dir, 'local.db')
    });
    // --data-dir does not move a store the file placed.
    expect(loadConfig({ config, dataDir: 'd' }, dir, {}).store).toEqual({
      kind: 'sqlite',
      path: join(dir, 'conf', 'db', 'runs.db')
    });
  });

  it('refuses stores it does not know, naming the value without its password and the forms expected', () => {
    const dir = tempDir();
    const attempt = (store: string, env: NodeJS.ProcessEnv = {}) => {
      try {
        loadConfig({ store }, dir, env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error(`${store} was accepted`);
    };
    const mysql = attempt('mysql://root:hunter2@db/agents');
    expect(mysql).toBe(
      '--store "mysql://root:***@db/agents": unsupported store; expected a path or sqlite:PATH for SQLite, or postgres://USER:PASSWORD@HOST:PORT/DATABASE'
    );
    const broken = attempt('postgres://user:hunter2@:5432/x');
    expect(broken).toMatch(
      /^--store "postgres:\/\/\*\*\*@:5432\/x": not a valid PostgreSQL URL; expected postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE$/
    );
    // A password holding / and @ makes the URL unparseable: still nothing of it is shown.
    const slashed = attempt('postgres://user:hun/ter@2@db.internal:5432/agents');
    expect(slashed).toMatch(
      /^--store "postgres:\/\/\*\*\*@db\.internal:5432\/agents": not a valid PostgreSQL URL/
    );
    for (const message of [mysql, broken, slashed]) expect(message).not.toMatch(/hunter2|hun\/ter/);
    const fromFile = withConfig('store: [a, b]\n');
    expect(() => loadConfig({ config: join(fromFile, 'conf', 'agent-executor.yaml') }, fromFile, {})).toThrow(
      /store \["a","b"\]: expected a string/
    );
    expect(() => loadConfig({}, dir, { AGENT_EXECUTOR_STORE: 'redis://:pw@cache/0' })).toThrow(
      /^AGENT_EXECUTOR_STORE "redis:\/\/:\*\*\*@cache\/0": unsupported store/
    );
  });
});
