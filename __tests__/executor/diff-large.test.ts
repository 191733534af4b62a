// A run that changed more text than git's output buffer holds (64 MiB) still gets its diff event,
// cut at 1 MiB, and its patch: the diff is read from a file git writes, never from its whole output
// in memory (before: such a run failed with "could not read the workspace"). Real executor on a real
// port, a real git repository, a simulated agent writing the text.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { eventually } from '../support/eventually.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  const repo = tempDir('diff-large-source-');
  writeFileSync(join(repo, 'README.md'), 'readme\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'initial');
  ex = await startTestExecutor({
    workspaces: { retention: '0s', quota: '400MiB', max_patch: '400MiB' },
    environments: [{ id: 'big', source: repo, agent: { kind: 'simulated' } }]
  });
  key = (await ex.key()).raw;
});

afterAll(async () => {
  await ex.stop(1000);
});

describe('a run that changed more text than git answers at once', () => {
  it('succeeds with its diff cut at 1 MiB and names the file changed', async () => {
    // 90 MiB of text lines in three new files (git diffs a file under 64 MiB as text), and a small
    // change beside them.
    const prompt = [
      '@sim run yes "a line of text the agent wrote, again and again" | head -c 31457280 > big.txt',
      '@sim run cp big.txt big2.txt && cp big.txt big3.txt',
      '@sim run echo changed >> README.md'
    ].join('\n');
    const response = await ex.request('/api/v1/agent/run', {
      method: 'POST',
      key,
      body: JSON.stringify({ prompt, config: { environment_id: 'big' } })
    });
    expect(response.status).toBe(200);
    const id = ((await response.json()) as { run_id: string }).run_id;
    expect(await waitForState({ on: ex, key, id }, undefined, { timeoutMs: 300_000 })).toMatchObject({
      state: 'SUCCEEDED'
    });
    // The transcript, page after page (a page holds a bounded number of bytes), once it holds the end.
    type Event = {
      seq: number;
      kind: string;
      state?: string;
      diff?: string;
      truncated?: boolean;
      files?: unknown[];
    };
    const events = await eventually(
      async () => {
        const all: Event[] = [];
        for (let after = 0, more = true; more;) {
          const page = (await (
            await ex.request(`/api/v1/agent/runs/${id}/transcript?after=${after}`, { key })
          ).json()) as {
            events: Event[];
            has_more?: boolean;
            next_after?: number;
          };
          all.push(...page.events);
          more = page.has_more === true && page.events.length > 0;
          after = page.next_after ?? page.events.at(-1)?.seq ?? after;
        }
        return all.some(event => event.kind === 'state' && event.state === 'SUCCEEDED') && all;
      },
      { what: `the transcript of run ${id} to hold its end`, timeoutMs: 60_000 }
    );
    const diff = events.find(event => event.kind === 'diff');
    expect(diff).toBeDefined();
    expect(diff!.truncated).toBe(true);
    expect(diff!.files).toEqual(
      expect.arrayContaining([
        { path: 'README.md', change: 'modified' },
        { path: 'big.txt', change: 'added' },
        { path: 'big3.txt', change: 'added' }
      ])
    );
    expect(diff!.diff!.endsWith('\n[diff cut at 1048576 bytes]\n')).toBe(true);
    expect(Buffer.byteLength(diff!.diff!)).toBeLessThan(1024 * 1024 + 100);
    expect(diff!.diff).toContain('+a line of text the agent wrote, again and again\n');
  }, 360_000);
});
