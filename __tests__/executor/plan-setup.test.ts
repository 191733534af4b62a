// Plan mode in an environment whose setup writes (issue 35): the setup runs with the workspace
// writable, as in any run, and only the agent's plan turn sees it read-only; a command agent knows
// its turn's mode from AGENT_MODE; a run continued by follow-ups keeps one `changes.patch`, always
// everything since the start commit, and names its earlier patches by turn. The executor on a real
// port, a real SQLite file, real sandboxed processes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRunClient, artifactsOf } from '../../src/client/index.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let client: AgentRunClient;
let key: string;
const repo = tempDir('plan-setup-source-');

/** A command agent: says its mode, shows the setup's file, then tries to change it. */
const AGENT = [
  'echo "mode=$AGENT_MODE"',
  'cat config.txt',
  '{ cat; echo; } >> notes.txt && echo "notes written" || echo "notes refused"'
].join('\n');

beforeAll(async () => {
  writeFileSync(join(repo, 'config.example'), 'value from the example\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  ex = await startTestExecutor({
    workers: 2,
    environments: [
      {
        id: 'configured',
        source: repo,
        setup: ['cp config.example config.txt'],
        agent: { kind: 'command', command: ['/bin/sh', '-c', AGENT], prompt: 'stdin' }
      },
      {
        id: 'setup-fails',
        source: repo,
        setup: ['cp missing.example config.txt'],
        agent: { kind: 'simulated' }
      }
    ]
  });
  key = (await ex.key('team-a', 'personal', 'alice')).raw;
  client = new AgentRunClient({ baseUrl: ex.url, apiKey: key });
});
afterAll(async () => {
  client.close();
  await ex.stop(1000);
  rmSync(repo, { recursive: true, force: true });
});

const ended = (id: string) => waitForState({ on: ex, key, id });

async function stdout(id: string): Promise<string> {
  const events = (await client.runs.wholeTranscript(id))?.events ?? [];
  return events
    .filter(event => event.kind === 'output' && event.stream === 'stdout')
    .map(event => String(event.text))
    .join('');
}

describe('plan mode in an environment whose setup writes', () => {
  it('runs the setup writable, then the agent read-only; AGENT_MODE says plan, then normal', async () => {
    const { run_id: id } = await client.runs.create({
      prompt: 'first line',
      config: { environment_id: 'configured' },
      mode: 'plan'
    });
    const run = await ended(id);
    expect(run.state).toBe('SUCCEEDED');
    const planned = await stdout(id);
    expect(planned).toContain('mode=plan\nvalue from the example\n');
    expect(planned).toContain('notes refused');

    await client.runs.followUp(id, { message: 'carry it out' });
    expect((await ended(id)).state).toBe('SUCCEEDED');
    const carried = (await stdout(id)).slice(planned.length);
    expect(carried).toContain('mode=normal\nvalue from the example\n');
    expect(carried).toContain('notes written');
  });

  it('a setup that fails in a plan-mode run says it was a plan-mode run and that setup is writable', async () => {
    const { run_id: id } = await client.runs.create({
      prompt: '@sim result never',
      config: { environment_id: 'setup-fails' },
      mode: 'plan'
    });
    const run = await ended(id);
    expect(run).toMatchObject({ state: 'FAILED', error_code: 'setup_failed' });
    expect(run.status_message).toMatch(
      /setup command `cp missing.example config.txt` exited with code 1 in a plan-mode run \(setup runs with the workspace writable/
    );
  });
});

describe('one changes.patch per run', () => {
  it('after follow-ups, changes.patch is everything since the start commit; earlier ones are named by turn', async () => {
    const { run_id: id } = await client.runs.create({
      prompt: 'one',
      config: { environment_id: 'configured' }
    });
    expect((await ended(id)).state).toBe('SUCCEEDED');
    await client.runs.followUp(id, { message: 'two' });
    expect((await ended(id)).state).toBe('SUCCEEDED');
    await client.runs.followUp(id, { message: 'three' });
    const run = await ended(id);
    expect(run.state).toBe('SUCCEEDED');

    const files = artifactsOf(await client.runs.get(id))
      .filter(artifact => artifact.artifact_type === 'FILE')
      .map(artifact => artifact.data as { filename?: string; artifact_uid?: string });
    expect(files.map(file => file.filename)).toEqual([
      'changes-turn-1.patch',
      'changes-turn-2.patch',
      'changes.patch'
    ]);
    const text = async (name: string) =>
      (
        await client.artifacts.download(files.find(file => file.filename === name)!.artifact_uid!)
      ).bytes.toString();
    const current = await text('changes.patch');
    expect(current).toContain('+one\n+two\n+three\n');
    expect(await text('changes-turn-1.patch')).toContain('+one\n');
    expect(await text('changes-turn-1.patch')).not.toContain('+two');
    expect(await text('changes-turn-2.patch')).toContain('+one\n+two\n');
    // The details the artifact endpoint gives carry the new name too.
    const details = await client.artifacts.get(files[0]!.artifact_uid!);
    expect(JSON.stringify(details)).toContain('changes-turn-1.patch');
  });
});
