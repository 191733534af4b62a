// `server.session_pages`: a session link is a bearer capability for a run's transcript, and the
// action may post it where strangers read. With `sign-in` the link alone shows nothing: the page
// and its downloads also need a dashboard sign-in of the run's team (a browser without one is sent
// to sign in and back; another team's sign-in gets the same 404 as a wrong token).

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseConfig } from '../../src/executor/config/config.js';
import { type TestExecutor, startTestExecutor } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let ex: TestExecutor;
let keyA: string;
let keyB: string;
let link: string;

async function signIn(key: string): Promise<string> {
  const response = await fetch(`${ex.url}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: ex.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ api_key: key }).toString()
  });
  expect(response.status).toBe(303);
  return response.headers.get('set-cookie')!.split(';')[0]!;
}

beforeAll(async () => {
  ex = await startTestExecutor({ server: { session_pages: 'sign-in' } });
  keyA = (await ex.key('team-a')).raw;
  keyB = (await ex.key('team-b')).raw;
  const created = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key: keyA,
    body: JSON.stringify({ prompt: '@sim result shown', config: { environment_id: 'local' } })
  });
  const { run_id } = (await created.json()) as { run_id: string };
  const run = await waitForState<{ run_id: string; state: string; session_link?: string }>({
    on: ex,
    key: keyA,
    id: run_id
  });
  link = run.session_link!;
});
afterAll(() => ex.stop(500));

describe('server.session_pages: sign-in', () => {
  it('sends a browser without a sign-in to sign in, and back to the page after it', async () => {
    const response = await fetch(link, { redirect: 'manual' });
    expect(response.status).toBe(303);
    const { pathname, search } = new URL(link);
    expect(response.headers.get('location')).toBe(`/?next=${encodeURIComponent(pathname + search)}`);
    expect(await response.text()).not.toContain('shown');
  });

  it("shows the page to a sign-in of the run's team holding the link", async () => {
    const response = await fetch(link, { headers: { cookie: await signIn(keyA) } });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('shown');
  });

  it("answers another team's sign-in 404, as a wrong token", async () => {
    const response = await fetch(link, { headers: { cookie: await signIn(keyB) }, redirect: 'manual' });
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain('shown');
  });

  it('refuses a value of neither form at start-up, naming it', () => {
    expect(() => parseConfig({ server: { session_pages: 'public' } }, '/tmp')).toThrow(
      /server\.session_pages.*"public".*link.*sign-in/
    );
  });
});
