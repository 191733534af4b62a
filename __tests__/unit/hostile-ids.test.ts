// Ids and links a hostile service (or a tampered state file) hands the client: a run id `..` or
// `.` must never become a URL path (`/agent/runs/..` + `/cancel` is `POST /agent/cancel`), and an
// artifact's download URL is followed only over http(s). A real contract server records every
// request; the post step runs with @actions/core mocked.
import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { createFakeCore } from '../__fixtures__/core.js';
import { ContractServer } from '../support/contract-server.js';

const core = createFakeCore();
jest.unstable_mockModule('@actions/core', () => core);
const { postStep } = await import('../../src/action/post.js');
const { readSettings } = await import('../../src/action/inputs.js');
const { AgentRunClient } = await import('../../src/client/index.js');

const KEY = 'test-key-0123456789';
let server: ContractServer;

beforeAll(async () => {
  server = await new ContractServer({ apiKey: KEY, conversation: true }).start();
});
afterAll(() => server.stop());
beforeEach(() => {
  server.requests.length = 0;
});

const client = () => new AgentRunClient({ baseUrl: server.url, apiKey: KEY, maxRetries: 0 });

describe('run ids that are not a plain path segment', () => {
  it('are refused before any request: the post step sends no cancel for run id ..', async () => {
    for (const id of ['..', '.', 'a/../../cancel', '...']) {
      core.reset({ 'api-key': KEY, 'base-url': server.url }, { isPost: 'true', 'run-id': id });
      await postStep();
      expect(core.record.warnings[0]).toContain(`run id ${JSON.stringify(id)}: expected 1–200 letters`);
    }
    expect(server.requests).toEqual([]);
  });

  it('are refused in the client, in the run-id input and in a create answer', async () => {
    const c = client();
    await expect(c.runs.get('..')).rejects.toThrow(
      'run id "..": expected 1–200 letters, digits or -_.:~ (not . or ..)'
    );
    await expect(c.runs.cancel('.')).rejects.toThrow('run id ".": expected');
    await expect(c.runs.conversation('../runs')).rejects.toThrow('run id "../runs": expected');
    expect(server.requests).toEqual([]);
    expect(() =>
      readSettings(name => ({ 'api-key': KEY, 'base-url': server.url, 'run-id': '..' })[name] ?? '', {})
    ).toThrow('run-id "..": expected a run id of 1–200 letters');
    server.fault('POST /api/v1/agent/runs', { kind: 'status', status: 200, body: '{"run_id":".."}' });
    await expect(c.runs.create({ prompt: 'p', config: { environment_id: 'e' } })).rejects.toThrow(
      'expected a run_id of 1–200 letters'
    );
    c.close();
  });
});

describe('artifact downloads', () => {
  it('follow only http(s) URLs', async () => {
    for (const url of ['file:///etc/passwd', 'data:text/plain,hello', 'ftp://files.example/x']) {
      server.artifactFiles.set('a1', { details: { artifact_uid: 'a1', download_url: url } });
      const c = client();
      await expect(c.artifacts.download('a1')).rejects.toThrow(
        /the download URL's scheme ".*" is refused; expected http\(s\)/
      );
      c.close();
    }
  });
});
