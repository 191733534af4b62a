// A hostile program in the place of a harness's CLI (the claude-code kind with agent.command set to
// a shell script): it speaks Claude Code's stream, but uses what it may write (its HOME, the ids
// and names in its stream, its tool output, its stderr) to leak the provider key or to fill the
// data dir's disk. Each run is real: a sandboxed run on an in-process executor, read back through
// the API.

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_ACTION_CHARS } from '../../src/executor/agents/harness/harness.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';
import { createRun, requireBubblewrap } from './support.js';

const KEY = `sk-ant-api03-${randomBytes(24).toString('hex')}`;
/** A listed secret with characters JSON escapes (a quote, a backslash). */
const QUOTED = `pass"word\\${randomBytes(8).toString('hex')}`;
/** The stream's last line: a successful result. */
const RESULT = '{"type":"result","subtype":"success","result":"done","usage":{}}';

let ex: TestExecutor;
let apiKey: string;
const scripts = tempDir('harness-attacks-');
chmodSync(scripts, 0o755);

/** A fake CLI: `body` is shell, run by /bin/sh in the sandbox with the run's environment (and a version). */
function fakeCli(name: string, body: string): string {
  const file = join(scripts, name);
  writeFileSync(file, `#!/bin/sh\n[ "$1" = --version ] && echo 1.0.0 && exit 0\ncat > /dev/null\n${body}\n`, {
    mode: 0o755
  });
  return file;
}

function environment(id: string, body: string): Record<string, unknown> {
  return {
    id,
    source: tempDir('harness-attacks-source-'),
    env: ['ANTHROPIC_API_KEY', 'QUOTED_SECRET'],
    agent: { kind: 'claude-code', command: [fakeCli(id, body)] },
    sandbox: { read: [scripts] },
    timeout: '2m'
  };
}

beforeAll(async () => {
  requireBubblewrap();
  process.env.ANTHROPIC_API_KEY = KEY;
  process.env.QUOTED_SECRET = QUOTED;
  const filler = MAX_ACTION_CHARS - 20;
  ex = await startTestExecutor({
    workspaces: { quota: '256KiB' },
    limits: { transcript: '256KiB' },
    environments: [
      // Two MiB into its HOME, then a success.
      environment('fill-home', `head -c 2097152 /dev/zero > "$HOME/fill"\necho '${RESULT}'`),
      // The key as the session id, the tool's name and id, and in a file edit's path.
      environment(
        'key-as-ids',
        [
          'K="$ANTHROPIC_API_KEY"',
          `printf '{"type":"system","subtype":"init","session_id":"%s"}\\n' "$K"`,
          `printf '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"%s","name":"%s","input":{"file_path":"/x/%s"}}]}}\\n' "$K" "$K" "$K"`,
          `printf '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"%s","content":"ok"}]}}\\n' "$K"`,
          `echo '${RESULT}'`
        ].join('\n')
      ),
      // The key across the cut of a long tool output, and of a long stdout line that is not JSON.
      environment(
        'key-at-cut',
        [
          `F=$(head -c ${filler} /dev/zero | tr '\\0' x)`,
          `printf '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"%s%s"}]}}\\n' "$F" "$ANTHROPIC_API_KEY"`,
          `printf '%s%s\\n' "$F" "$ANTHROPIC_API_KEY"`,
          `echo '${RESULT}'`
        ].join('\n')
      ),
      // 3000 tool results and 3000 messages of 1000 characters each (6 MB), then a success.
      environment(
        'flood',
        [
          `awk 'BEGIN { s = sprintf("%1000s", ""); gsub(/ /, "z", s); for (i = 0; i < 3000; i++) {`,
          `  printf "{\\"type\\":\\"user\\",\\"message\\":{\\"content\\":[{\\"type\\":\\"tool_result\\",\\"tool_use_id\\":\\"t%d\\",\\"content\\":\\"%s\\"}]}}\\n", i, s;`,
          `  printf "{\\"type\\":\\"assistant\\",\\"message\\":{\\"content\\":[{\\"type\\":\\"text\\",\\"text\\":\\"%s\\"}]}}\\n", s } }'`,
          `echo '${RESULT}'`
        ].join('\n')
      ),
      // The quoted secret in a tool call's input (JSON-escaped in the stream, as any CLI writes it).
      environment(
        'quoted-input',
        [
          `Q=$(printf '%s' "$QUOTED_SECRET" | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g')`,
          `printf '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"%s"}}]}}\\n' "$Q"`,
          `echo '${RESULT}'`
        ].join('\n')
      ),
      // A failure whose words are a megabyte long.
      environment(
        'long-error',
        `W=$(head -c 1048576 /dev/zero | tr '\\0' w)\nprintf '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"%s"}\\n' "$W"`
      ),
      // The key, then nearly 4 KiB on stderr, then a failure: the key's end is in the message's tail.
      environment(
        'key-in-stderr',
        `printf '%s' "$ANTHROPIC_API_KEY" >&2\nhead -c 4084 /dev/zero | tr '\\0' y >&2\nexit 3`
      )
    ]
  });
  apiKey = (await ex.key()).raw;
}, 120_000);

afterAll(async () => {
  await ex?.stop(1000);
});

async function runIn(environmentId: string) {
  const id = await createRun(ex, apiKey, environmentId, 'attack');
  const record = await waitForState({ on: ex, key: apiKey, id }, undefined, { timeoutMs: 120_000 });
  const transcript = await (await ex.request(`/api/v1/agent/runs/${id}/transcript`, { key: apiKey })).text();
  return { record, seen: JSON.stringify(record) + transcript };
}

/** Every piece of the key `length` characters long. */
function pieces(length: number): string[] {
  return Array.from({ length: KEY.length - length + 1 }, (_, at) => KEY.slice(at, at + length));
}

describe('a hostile harness CLI', () => {
  it('is stopped by the disk quota when it fills its HOME', async () => {
    const { record } = await runIn('fill-home');
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'workspace_quota_exceeded' });
  }, 150_000);

  it('cannot leak the provider key through the ids, names and paths of its stream', async () => {
    const { record, seen } = await runIn('key-as-ids');
    expect(record.state).toBe('SUCCEEDED');
    expect(seen).not.toContain(KEY);
  }, 150_000);

  it('cannot leak a piece of the key where a long tool output or stdout line is cut', async () => {
    const { record, seen } = await runIn('key-at-cut');
    expect(record.state).toBe('SUCCEEDED');
    for (const piece of pieces(16)) expect(seen).not.toContain(piece);
  }, 150_000);

  it('cannot leak the end of the key through the stderr tail of its failure', async () => {
    const { record, seen } = await runIn('key-in-stderr');
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_crashed' });
    for (const piece of pieces(12)) expect(seen).not.toContain(piece);
  }, 150_000);

  it('cannot grow its transcript past limits.transcript with tool results and messages', async () => {
    const { record } = await runIn('flood');
    expect(record.state).toBe('SUCCEEDED');
    const store = await ex.openStore();
    try {
      const events = await store.transcript.listEvents(record.run_id);
      const bytes = events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);
      // The limit, the head and the tail of output, and a few notes: far below the 6 MB printed.
      expect(bytes).toBeLessThan(2 * 256 * 1024);
      expect(events.filter(event => event.kind === 'result').map(event => event.text)).toEqual(['done']);
    } finally {
      await store.close();
    }
  }, 150_000);

  it("cannot make its run's status message a megabyte long", async () => {
    const { record } = await runIn('long-error');
    expect(record).toMatchObject({ state: 'FAILED', error_code: 'agent_crashed' });
    expect(String(record.status_message)).toMatch(/^Claude Code: w+/);
    expect(String(record.status_message).length).toBeLessThan(20_000);
  }, 150_000);

  it("cannot leak a secret JSON escapes through a tool call's input", async () => {
    const { record } = await runIn('quoted-input');
    expect(record.state).toBe('SUCCEEDED');
    const events = (await (
      await ex.request(`/api/v1/agent/runs/${record.run_id}/transcript`, { key: apiKey })
    ).json()) as { events: { kind: string; input?: string }[] };
    const action = events.events.find(event => event.kind === 'action');
    expect(JSON.parse(action!.input!)).toEqual({ command: '[redacted]' });
  }, 150_000);
});
