// The bundled action (dist/index.js) run as the GitHub runner runs it, against a contract server.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ContractServer } from '../support/contract-server.js';
import { eventually } from '../support/eventually.js';
import { runAction, startAction } from '../support/runner.js';

const KEY = 'test-key-0123456789';
let server: ContractServer;
let inputs: Record<string, string>;

beforeEach(async () => {
  server = await new ContractServer({ apiKey: KEY }).start();
  inputs = {
    prompt: 'Fix the bug',
    'environment-id': 'env-1',
    'api-key': KEY,
    'base-url': server.url,
    // The first read 100 ms after the create instead of 1 s; this server holds every read after it.
    'poll-interval': '100ms'
  };
});
afterEach(() => server.stop());

/** The id of the one run the server has, once it has it. */
const onlyRun = () => eventually(() => [...server.runs.keys()][0], { what: 'the run created' });

/** Once the action sent its first cancel (refused or held, as the test set the server up). */
const cancelSent = () =>
  eventually(() => server.requests.some(r => r.method === 'POST' && r.path.endsWith('/cancel')), {
    what: 'a cancel request'
  });

function expectNoKey(run: {
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
}) {
  // The runner consumes `::add-mask::` itself and hides the value everywhere after it.
  const stdout = run.stdout.replace(`::add-mask::${KEY}\n`, '');
  for (const text of [stdout, run.stderr, JSON.stringify(run.outputs), run.summary]) {
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(Buffer.from(KEY).toString('base64'));
  }
}

describe('action end to end (contract server)', () => {
  it('succeeds with outputs, a summary and the session link', async () => {
    const action = startAction({ ...inputs, title: 'E2E', config: '{"model_id":"m1"}' });
    // The run moves on each time the action has seen where it is: QUEUED, INPROGRESS, SUCCEEDED.
    await action.waitFor(/run \S+: QUEUED\n/);
    const id = await onlyRun();
    server.update(id, { state: 'INPROGRESS', session_link: `${server.url}/sessions/${id}` });
    await action.waitFor(/run \S+: QUEUED → INPROGRESS\n/);
    server.update(id, { state: 'SUCCEEDED', completed_at: new Date().toISOString() });
    const result = await action.done;
    expect(result.code).toBe(0);
    const runId = result.outputs['run-id']!;
    expect(server.runs.has(runId)).toBe(true);
    expect(runId).toBe(id);
    expect(result.outputs).toMatchObject({
      state: 'SUCCEEDED',
      conclusion: 'succeeded',
      'session-link': `${server.url}/sessions/${runId}`,
      'status-message': '',
      'error-code': ''
    });
    expect(Number(result.outputs['duration-seconds'])).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(result.outputs.run!)).toMatchObject({
      run_id: runId,
      title: 'E2E',
      state: 'SUCCEEDED'
    });
    expect(result.stdout).toContain(`::add-mask::${KEY}`);
    expect(result.stdout).toContain(`Created run ${runId} in environment env-1.`);
    expect(result.stdout).toContain(`Session: ${server.url}/sessions/${runId}`);
    expect(result.stdout).toMatch(/run .*: QUEUED → INPROGRESS/);
    expect(result.summary).toContain('<h3>Agent run</h3>');
    expect(result.summary).toContain(`<a href="${server.url}/sessions/${runId}">`);
    expect(result.state).toMatchObject({ isPost: 'true', 'run-id': runId, settled: 'true' });
    const created = JSON.parse(server.requests.find(r => r.method === 'POST')!.body);
    expect(created).toEqual({
      prompt: 'Fix the bug',
      config: { model_id: 'm1', environment_id: 'env-1' },
      title: 'E2E'
    });
    expectNoKey(result);
  });

  it('fails the step on FAILED with the status message as an error annotation', async () => {
    server.onCreate = run =>
      server.script(run.run_id, [
        [
          200,
          {
            state: 'FAILED',
            status_message: { message: 'tests failed: 3 <errors>', error_code: 'agent_failed' },
            session_link: 'https://s/1'
          }
        ]
      ]);
    const result = await runAction(inputs);
    expect(result.code).toBe(1);
    const runId = result.outputs['run-id'];
    expect(result.stdout).toContain(
      `::error::Run ${runId} ended FAILED (agent_failed): tests failed: 3 <errors>\n`
    );
    expect(result.stdout.split('https://s/1')).toHaveLength(2);
    expect(result.outputs).toMatchObject({
      conclusion: 'failed',
      'status-message': 'tests failed: 3 <errors>',
      'error-code': 'agent_failed'
    });
    // Every character Markdown or an autolink gives a meaning to is a character reference in the summary.
    expect(result.summary).toContain('tests failed&#58; 3 &#60;errors&#62;');
    expectNoKey(result);
  });

  it('passes on a failing state left out of fail-on', async () => {
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'CANCELLED' }]]);
    const result = await runAction({ ...inputs, 'fail-on': 'FAILED' });
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('cancelled');
  });

  it('times out, cancels the run and says so', async () => {
    const result = await runAction({ ...inputs, timeout: '1s', summary: 'false' });
    expect(result.code).toBe(1);
    const runId = result.outputs['run-id']!;
    expect(result.outputs.conclusion).toBe('timed_out');
    expect(result.outputs.state).toBe('CANCELLED');
    expect(server.runs.get(runId)!.state).toBe('CANCELLED');
    expect(result.stdout).toContain(
      `::error::Run ${runId} did not finish within 1s (last state QUEUED); cancelled it.`
    );
    expect(result.summary).toBe('');
    // Ended at its deadline, not after a held poll's 50 s (how soon is in bench/).
    expect(result.ms).toBeLessThan(50_000);
    // The run was cancelled 1 s after it was created, and the record read after the cancel says so.
    expect(Number(result.outputs['duration-seconds'])).toBe(1);
    const cancel = server.requests.find(r => r.path.endsWith('/cancel'))!;
    expect(JSON.parse(cancel.body)).toEqual({ reason: 'timeout after 1s' });
    expect(server.runs.get(runId)!.status_message).toBe('cancelled by a client: timeout after 1s');
  });

  it('reports the time waited, not 0 s, for a run left running at the deadline', async () => {
    const result = await runAction({ ...inputs, timeout: '1s', 'on-timeout': 'leave-running' });
    expect(result.code).toBe(1);
    expect(result.outputs.state).toBe('QUEUED');
    expect(Number(result.outputs['duration-seconds'])).toBe(1);
    expect(result.summary).toMatch(/<td>Duration<\/td><td>1s<\/td>/);
  });

  it('leaves the run alone at the deadline with on-timeout: leave-running', async () => {
    const result = await runAction({ ...inputs, timeout: '1s', 'on-timeout': 'leave-running' });
    expect(result.code).toBe(1);
    expect(server.runs.get(result.outputs['run-id']!)!.state).toBe('QUEUED');
    expect(result.stdout).toContain('left it running (on-timeout: leave-running)');
  });

  it('cancels the remote run on SIGTERM within the grace period', async () => {
    const action = startAction(inputs);
    await action.waitFor('Waiting for run');
    action.child.kill('SIGTERM');
    // Ends on the signal, not after a held poll's 50 s.
    const sent = Date.now();
    const result = await action.done;
    expect(Date.now() - sent).toBeLessThan(50_000);
    const runId = result.outputs['run-id']!;
    expect(server.runs.get(runId)!.state).toBe('CANCELLED');
    expect(result.code).toBe(1);
    expect(result.outputs.conclusion).toBe('cancelled');
    expect(result.stdout).toContain(`Cancelled run ${runId} (the job was cancelled).`);
    expect(server.runs.get(runId)!.status_message).toBe('cancelled by a client: the job was cancelled');
    expect(result.state.settled).toBe('true');
    expectNoKey(result);
  });

  it('returns right after create with wait: false, and the post step leaves that run alone', async () => {
    const result = await runAction({ ...inputs, wait: 'false' });
    expect(result.code).toBe(0);
    const runId = result.outputs['run-id']!;
    expect(result.outputs).toMatchObject({ state: 'QUEUED', conclusion: '' });
    expect(result.summary).toContain('<h3>Agent run</h3>');
    expect(result.summary).toContain(`<code>${runId}</code>`);
    expect(result.summary).toContain('<td>State</td><td>QUEUED</td>');
    const post = await runAction(inputs, { state: result.state });
    expect(post.code).toBe(0);
    expect(server.runs.get(runId)!.state).toBe('QUEUED');
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBe(0);
  });

  it('post step cancels a run the main step never settled', async () => {
    const result = await runAction({ ...inputs, wait: 'false' });
    const runId = result.outputs['run-id']!;
    const post = await runAction(inputs, { state: { isPost: 'true', 'run-id': runId } });
    expect(post.code).toBe(0);
    expect(post.stdout).toContain(`Cancelled run ${runId} (the main step did not finish).`);
    expect(server.runs.get(runId)!.state).toBe('CANCELLED');
  });

  it('post step gives a notice, not a failure, when the server has no cancel endpoint', async () => {
    await server.stop();
    server = await new ContractServer({ apiKey: KEY, cancel: false }).start();
    const first = await runAction({ ...inputs, 'base-url': server.url, wait: 'false' });
    const runId = first.outputs['run-id']!;
    const post = await runAction(
      { ...inputs, 'base-url': server.url },
      { state: { isPost: 'true', 'run-id': runId } }
    );
    expect(post.code).toBe(0);
    expect(post.stdout).toContain(
      `::notice::The server has no cancel endpoint (404); run ${runId} may keep running.`
    );
  });

  it('waits for an existing run given by run-id', async () => {
    const first = await runAction({ ...inputs, wait: 'false' });
    const runId = first.outputs['run-id']!;
    const action = startAction({
      'api-key': KEY,
      'base-url': server.url,
      'run-id': runId,
      'poll-interval': inputs['poll-interval']!
    });
    // The run ends while the action waits for it: after its first read.
    await action.waitFor(/run \S+: QUEUED\n/);
    server.update(runId, { state: 'SUCCEEDED', session_link: 'https://s/2' });
    const result = await action.done;
    expect(result.code).toBe(0);
    expect(result.outputs).toMatchObject({
      'run-id': runId,
      conclusion: 'succeeded',
      'session-link': 'https://s/2'
    });
    expect(server.count('POST', '/api/v1/agent/run')).toBe(1);
  });

  it('fails with a clear message on bad inputs and creates nothing', async () => {
    const result = await runAction({ ...inputs, 'api-key': '', timeout: 'forever' });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('::error::2 inputs are invalid:%0A- api-key is empty');
    expect(result.stdout).toContain('timeout "forever": expected a duration such as 90s, 45m or 1h30m');
    expect(server.requests).toHaveLength(0);
  });

  it('fails with the server error when the key is rejected, without printing it', async () => {
    const result = await runAction({ ...inputs, 'api-key': 'wrong-key-456' });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      '::error::401 from POST /api/v1/agent/runs: the API key was rejected; check the api-key secret'
    );
    expect(result.stdout.replace('::add-mask::wrong-key-456', '')).not.toContain('wrong-key-456');
    // Not a cancelled job: nothing for the post step to cancel.
    expect(result.state.settled).toBe('true');
  });

  it('still reports the run when the job summary cannot be written', async () => {
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'SUCCEEDED' }]]);
    const result = await runAction(inputs, { env: { GITHUB_STEP_SUMMARY: '' } });
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('succeeded');
    expect(result.stdout).toContain('::warning::Could not write the job summary');
  });
});

describe('action end to end against answers of the production service', () => {
  async function serviceLike(options: ConstructorParameters<typeof ContractServer>[0]) {
    await server.stop();
    server = await new ContractServer({ apiKey: KEY, ...options }).start();
    inputs['base-url'] = server.url;
  }

  it('creates on a server that only has the deprecated POST /agent/run', async () => {
    await serviceLike({ legacyCreateOnly: true });
    server.onCreate = run => server.script(run.run_id, [[100, { state: 'SUCCEEDED' }]]);
    const result = await runAction(inputs);
    expect(result.code).toBe(0);
    expect(result.outputs.conclusion).toBe('succeeded');
    expect(server.requests.filter(r => r.method === 'POST').map(r => r.path)).toEqual([
      '/api/v1/agent/runs',
      '/api/v1/agent/run'
    ]);
  });

  it('retries the cancel of a PENDING run until the service accepts it', async () => {
    await serviceLike({ cancelStyle: 'service' });
    server.onCreate = run => server.update(run.run_id, { state: 'PENDING' });
    const action = startAction({ ...inputs, timeout: '1s' });
    // The first cancel is refused (409 while PENDING, answered as it arrives); then the run starts.
    await cancelSent();
    server.update(await onlyRun(), { state: 'INPROGRESS' });
    const result = await action.done;
    const runId = result.outputs['run-id']!;
    expect(result.code).toBe(1);
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBeGreaterThan(1);
    expect(server.runs.get(runId)!.state).toBe('CANCELLED');
    expect(result.stdout).toContain('(last state PENDING); cancelled it.');
    expect(result.outputs.state).toBe('CANCELLED');
  });

  it('with timeout 1s, says the state it read and keeps asking while the service answers 409 PENDING for 3 s', async () => {
    // Issue 25 items 21-22: one cancel request, "could not cancel it (failed)", "last state unknown".
    // The 409 says `retryable: false`, yet the service documents "409 while PENDING, retry after a moment".
    await serviceLike({ cancelStyle: 'service', pendingRetryable: false });
    server.onCreate = run =>
      server.script(run.run_id, [
        [50, { state: 'PENDING' }],
        [3000, { state: 'INPROGRESS' }]
      ]);
    // The first read due after the 1 s deadline (the default poll-interval): the wait ends before it.
    const result = await runAction({
      ...inputs,
      'poll-interval': '1s',
      timeout: '1s',
      'on-timeout': 'cancel'
    });
    const runId = result.outputs['run-id']!;
    expect(result.code).toBe(1);
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBeGreaterThan(1);
    expect(server.runs.get(runId)!.state).toBe('CANCELLED');
    expect(result.stdout).toContain(`did not finish within 1s (last state PENDING); cancelled it.`);
    expect(result.outputs.state).toBe('CANCELLED');
  }, 120_000);

  it('says a BLOCKED run cannot be cancelled, instead of calling it finished', async () => {
    await serviceLike({ cancelStyle: 'service' });
    server.onCreate = run =>
      server.script(run.run_id, [[100, { state: 'BLOCKED', session_link: 'https://s/blocked' }]]);
    const result = await runAction({ ...inputs, timeout: '1s' });
    const runId = result.outputs['run-id']!;
    expect(result.code).toBe(1);
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBe(1);
    expect(result.stdout).toContain(
      `::warning::Run ${runId} is BLOCKED (waiting for a person at https://s/blocked) and cannot be cancelled`
    );
    expect(result.stdout).toContain('(last state BLOCKED); could not cancel it (not cancellable).');
    expect(result.stdout).not.toContain('already finished');
    expect(result.outputs.state).toBe('BLOCKED');
  });

  it('says a run that ended while the cancel was on its way had already finished, after a 400', async () => {
    await serviceLike({ cancelStyle: 'service' });
    // The cancel sent at the 1 s deadline is held on its way until the run has ended.
    let arrive!: () => void;
    server.fault('POST /api/v1/agent/runs/', {
      kind: 'hold',
      until: new Promise<void>(resolve => (arrive = resolve))
    });
    const action = startAction({ ...inputs, timeout: '1s' });
    await cancelSent();
    server.update(await onlyRun(), { state: 'SUCCEEDED' });
    arrive();
    const result = await action.done;
    const runId = result.outputs['run-id']!;
    expect(server.count('POST', `/api/v1/agent/runs/${runId}/cancel`)).toBe(1);
    expect(result.stdout).toContain(`Run ${runId} had already finished (SUCCEEDED); nothing to cancel.`);
    expect(result.stdout).toContain('could not cancel it (already finished).');
    expect(result.outputs.state).toBe('SUCCEEDED');
  });
});
