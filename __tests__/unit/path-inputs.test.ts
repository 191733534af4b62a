// Files named by inputs (`prompt-file`, `output-schema`) in a workspace a stranger may have
// written: a symbolic link or a `..` path must not send a host file to the service. The main step
// runs with the toolkit mocked against a real contract server, on real files and links.
import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { linkSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeCore } from '../__fixtures__/core.js';
import { ContractServer } from '../support/contract-server.js';

const core = createFakeCore();
jest.unstable_mockModule('@actions/core', () => core);
const { run } = await import('../../src/action/main.js');

const KEY = 'test-key-0123456789';
const SECRET = 'HOST-SECRET-4f1d2c';
const root = mkdtempSync(join(tmpdir(), 'path-inputs-'));
const workspace = join(root, 'workspace');
const outside = join(root, 'host');
let server: ContractServer;
const savedWorkspace = process.env.GITHUB_WORKSPACE;

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY }).start();
  mkdirSync(join(workspace, '.github/agent'), { recursive: true });
  mkdirSync(join(workspace, '.git'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'environ'), `INPUT_API-KEY=${SECRET}\n`);
  writeFileSync(join(outside, 'config.json'), JSON.stringify({ auths: { 'ghcr.io': { auth: SECRET } } }));
  // What a stranger's pull request can add to a checkout.
  symlinkSync(join(outside, 'environ'), join(workspace, '.github/agent/review.md'));
  symlinkSync(join(outside, 'config.json'), join(workspace, '.github/agent/schema.json'));
  symlinkSync(outside, join(workspace, 'linked-dir'));
  linkSync(join(outside, 'environ'), join(workspace, 'hard.md'));
  writeFileSync(join(workspace, '.git/prompt.md'), `secret ${SECRET}`);
  writeFileSync(join(workspace, 'good.md'), 'Review the change');
  writeFileSync(join(workspace, 'good.json'), '{"type":"object","properties":{"verdict":{"type":"string"}}}');
  process.env.GITHUB_WORKSPACE = workspace;
});
afterAll(async () => {
  if (savedWorkspace === undefined) delete process.env.GITHUB_WORKSPACE;
  else process.env.GITHUB_WORKSPACE = savedWorkspace;
  await server.stop();
});
beforeEach(() => {
  server.requests.length = 0;
  server.onCreate = created => server.script(created.run_id, [[50, { state: 'SUCCEEDED' }]]);
});

const base = { 'environment-id': 'env-1', 'api-key': KEY };

async function attempt(inputs: Record<string, string>): Promise<string[]> {
  core.reset({ ...base, 'base-url': server.url, ...inputs });
  await run();
  return core.record.failures;
}

function expectNothingSent(): void {
  expect(server.requests.filter(r => r.method === 'POST')).toEqual([]);
  for (const request of server.requests) expect(request.body).not.toContain(SECRET);
}

describe('path inputs', () => {
  it('refuses a prompt-file that is a symbolic link, naming the path and the rule', async () => {
    const failures = await attempt({ 'prompt-file': '.github/agent/review.md' });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain('prompt-file ".github/agent/review.md"');
    expect(failures[0]).toContain(`${join(workspace, '.github/agent/review.md')} is a symbolic link`);
    expect(failures[0]).toContain('reached without symbolic links');
    expect(failures[0]).not.toContain(SECRET);
    expectNothingSent();
  });

  it('refuses a hard link to a file outside the workspace, naming the path and the rule', async () => {
    const failures = await attempt({ 'prompt-file': 'hard.md' });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(`${join(workspace, 'hard.md')} has 2 hard links`);
    expect(failures[0]).toContain('expected a file with one link only');
    expect(failures[0]).not.toContain(SECRET);
    expectNothingSent();
  });

  it('refuses a file reached through a linked folder', async () => {
    const failures = await attempt({ 'prompt-file': 'linked-dir/environ' });
    expect(failures[0]).toContain(`${join(workspace, 'linked-dir')} is a symbolic link`);
    expectNothingSent();
  });

  it('refuses .. and absolute paths outside the workspace', async () => {
    for (const path of ['../host/environ', join(outside, 'environ'), '/proc/self/environ']) {
      const failures = await attempt({ 'prompt-file': path });
      expect(failures[0]).toContain(`prompt-file ${JSON.stringify(path)}`);
      expect(failures[0]).toContain('is outside the workspace');
      expectNothingSent();
    }
  });

  it('refuses a file under .git/', async () => {
    const failures = await attempt({ 'prompt-file': '.git/prompt.md' });
    expect(failures[0]).toContain('is under .git/');
    expectNothingSent();
  });

  it('refuses an output-schema that is a symbolic link or outside the workspace', async () => {
    for (const path of ['.github/agent/schema.json', '../host/config.json']) {
      const failures = await attempt({ prompt: 'Judge it', 'output-schema': path });
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain(`output-schema ${JSON.stringify(path)}`);
      expect(failures[0]).toMatch(/is a symbolic link|is outside the workspace/);
      expectNothingSent();
    }
  });

  it('refuses a JSON object that is no JSON Schema (ajv strict mode)', async () => {
    writeFileSync(join(workspace, 'config.json'), JSON.stringify({ auths: { x: { auth: SECRET } } }));
    const failures = await attempt({ prompt: 'Judge it', 'output-schema': 'config.json' });
    expect(failures[0]).toMatch(
      /^output-schema "config.json": output schema is not a valid JSON Schema: .*auths/
    );
    expect(failures[0]).not.toContain(SECRET);
    expectNothingSent();
  });

  it('still reads regular files inside the workspace', async () => {
    const failures = await attempt({ 'prompt-file': 'good.md', 'output-schema': 'good.json' });
    expect(core.record.failures.filter(f => !f.includes('structured output'))).toEqual([]);
    expect(failures.join('')).not.toContain('symbolic');
    const created = JSON.parse(server.requests.find(r => r.method === 'POST')!.body) as { prompt: string };
    expect(created.prompt).toContain('Review the change');
    expect(created.prompt).toContain('"verdict"');
  });
});
