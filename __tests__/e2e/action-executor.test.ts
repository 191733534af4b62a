// The bundled action against the bundled executor, both run exactly as users run them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ExecutorProcess, spawnExecutorWithKey } from '../support/executor.js';
import { runAction, startAction } from '../support/runner.js';

let executor: ExecutorProcess;
let key: string;

beforeAll(async () => {
  const started = await spawnExecutorWithKey({ kind: 'personal', name: 'e2e' });
  ({ key } = started);
  executor = started;
});
afterAll(() => executor.stop());

const inputs = (prompt: string, extra: Record<string, string> = {}) => ({
  prompt,
  'environment-id': 'local',
  'api-key': key,
  'base-url': executor.url,
  ...extra
});

describe('action against the executor', () => {
  it('succeeds, and the session link opens the transcript', async () => {
    const result = await runAction(
      inputs('Write the notes\n@sim say done\n@sim write NOTES.md hello', { title: 'E2E success' })
    );
    expect(result.code).toBe(0);
    expect(result.outputs).toMatchObject({ state: 'SUCCEEDED', conclusion: 'succeeded', 'error-code': '' });
    const runId = result.outputs['run-id']!;
    expect(result.outputs['session-link']).toMatch(new RegExp(`^${executor.url}/sessions/${runId}\\?token=`));
    const page = await fetch(result.outputs['session-link']!);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('E2E success');
    expect(html).toContain('NOTES.md');
    expect(result.summary).toContain('succeeded');
    const stdout = result.stdout.replace(`::add-mask::${key}\n`, '');
    expect(stdout + result.stderr + result.summary + JSON.stringify(result.outputs)).not.toContain(key);
  });

  it('fails the job with the message of @sim fail', async () => {
    const result = await runAction(inputs('@sim fail lint found 3 errors'));
    expect(result.code).toBe(1);
    expect(result.outputs).toMatchObject({
      state: 'FAILED',
      conclusion: 'failed',
      'status-message': 'lint found 3 errors',
      'error-code': 'agent_failed'
    });
    // The session link once (when the wait first knew it), not again in the error.
    expect(result.stdout).toContain(
      `::error::Run ${result.outputs['run-id']} ended FAILED (agent_failed): lint found 3 errors\n`
    );
    expect(result.stdout.split(`${executor.url}/sessions/`)).toHaveLength(2);
  });

  it('cancels the run when the action gets SIGTERM', async () => {
    const action = startAction(inputs('@sim sleep 60'));
    await action.waitFor(/INPROGRESS/);
    action.child.kill('SIGTERM');
    const result = await action.done;
    expect(result.code).toBe(1);
    const run = (await (
      await fetch(`${executor.url}/api/v1/agent/runs/${result.outputs['run-id']}`, {
        headers: { authorization: `Bearer ${key}` }
      })
    ).json()) as { state: string };
    expect(run.state).toBe('CANCELLED');
    expect(result.outputs.conclusion).toBe('cancelled');
    // The summary shows the state the cancel left the run in, not the INPROGRESS seen while waiting.
    expect(result.summary).toMatch(
      /<td>State<\/td><td>(CANCELLED|cancelled by the job \(last read(:|&#58;) \w+\))<\/td>/
    );
  });

  it('notices the end of a run on its event stream: no read per interval', async () => {
    const result = await runAction(inputs('@sim sleep 5', { 'poll-interval': '100ms' }));
    expect(result.code).toBe(0);
    const runId = result.outputs['run-id']!;
    // The executor logs every request (JSON lines on a pipe). Over 5 s a poller backing off from
    // its poll-interval of 100 ms would read the run six times or more; the action follows the run's event stream (every
    // change and the end on one request) and reads little besides, however slow the machine. How
    // soon it notices is in bench/; the fallback to held reads is action-stream.test.ts's.
    const requests = executor
      .stderr()
      .split('\n')
      .filter(
        line => line.includes('"msg":"request"') && line.includes(`"path":"/api/v1/agent/runs/${runId}`)
      );
    const streams = requests.filter(line => line.includes(`"path":"/api/v1/agent/runs/${runId}/events"`));
    expect(streams.length).toBeGreaterThan(0);
    expect(requests.length).toBeLessThanOrEqual(4);
  });
});
