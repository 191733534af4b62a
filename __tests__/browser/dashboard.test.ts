// The dashboard in a real browser (headless Chromium driven by playwright-core) against a real
// executor: sign-in, live list and transcript, cancel, filters, team isolation, inert stranger
// content, the origin and CSRF checks, and a revoked key's session ending. Also takes the README's
// screenshots (docs/dashboard-*.png, rewritten with UPDATE_SCREENSHOTS=1).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { waitForState } from '../support/wait.js';

let browser: Browser;
let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  browser = await launchBrowser();
  const source = tempDir('dashboard-source-');
  process.env.DASHBOARD_TEST_SECRET = 'value-never-shown';
  writeFileSync(join(source, 'README.md'), 'hello\n');
  ex = await startTestExecutor({
    workers: 6,
    environments: [
      { id: 'web', source },
      { id: 'docs', source },
      { id: 'locked', source, env: ['DASHBOARD_TEST_SECRET'], setup: ['echo hidden-setup-command'] },
      {
        id: 'metered',
        source,
        timeout: '30m',
        agent: {
          kind: 'command',
          prompt: 'stdin',
          command: [
            '/bin/sh',
            '-c',
            'printf \'{"inference_cost": 0.5, "compute_cost": 0.25}\' > "$AGENT_USAGE_FILE"; ' +
              'if grep -q fail; then printf "first problem\\nsecond problem\\n" >&2; exit 3; fi; echo done'
          ]
        }
      }
    ]
  });
  key = (await ex.key('default', 'personal', 'Ada')).raw;
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await ex?.stop(1000);
});

async function createRun(
  prompt: string,
  options: { title?: string; environment?: string; withKey?: string } = {}
): Promise<string> {
  const response = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key: options.withKey ?? key,
    body: JSON.stringify({
      prompt,
      ...(options.title ? { title: options.title } : {}),
      config: { environment_id: options.environment ?? 'web' }
    })
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function runState(id: string, withKey = key): Promise<string> {
  return (
    (await (await ex.request(`/api/v1/agent/runs/${id}`, { key: withKey })).json()) as { state: string }
  ).state;
}

async function finished(id: string): Promise<void> {
  await waitForState({ on: ex, key, id });
}

let shown: Promise<{ failed: string; changed: string }> | undefined;
/** Two finished runs the run-page tests look at: a failed command run and one with changes. */
function shownRuns(): Promise<{ failed: string; changed: string }> {
  shown ??= (async () => {
    const failed = await createRun('please fail', { environment: 'metered' });
    const changed = await createRun('@sim write notes.md hello\n@sim sleep 1', { title: 'Made notes' });
    await finished(failed);
    await finished(changed);
    return { failed, changed };
  })();
  return shown;
}

/** A browser context signed in through the form, as a person would. */
async function signedIn(
  withKey = key,
  viewport = { width: 1280, height: 800 }
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  await page.goto(`${ex.url}/`);
  await page.getByLabel('API key').fill(withKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Runs' }).waitFor();
  return { context, page };
}

/** Signs in over plain HTTP; returns the cookie header and the CSRF token of the runs page. */
async function httpSession(withKey = key): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${ex.url}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: ex.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ api_key: withKey }).toString()
  });
  expect(response.status).toBe(303);
  const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
  const html = await (await fetch(`${ex.url}/`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
  return { cookie, csrf };
}

describe('dashboard in Chromium', () => {
  it('signs in with an API key into an HttpOnly, SameSite=Strict session cookie, under a CSP without unsafe-inline', async () => {
    const { context, page } = await signedIn();
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: 'agent_run_session', httpOnly: true, sameSite: 'Strict' });
    expect(cookies[0]!.value).not.toContain(key);
    expect(await page.content()).not.toContain(key);
    expect(page.url()).not.toContain(key);
    const response = await page.goto(`${ex.url}/`);
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await context.cookies()).toHaveLength(0);
    await context.close();
  }, 120_000);

  it('refuses a wrong key without saying more than that', async () => {
    const page = await browser.newPage();
    await page.goto(`${ex.url}/`);
    await page.getByLabel('API key').fill('arx_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('malformed, unknown or revoked');
    expect(await page.content()).not.toContain('arx_not-a-key');
    await page.close();
  });

  it('shows a run created through the API live, then its transcript growing, and cancels it', async () => {
    const { context, page } = await signedIn();
    await page.evaluate(() => ((globalThis as { marker?: number }).marker = 1));
    await page.locator('#live-status:text("Live")').waitFor();
    const id = await createRun('@sim say first line\n@sim sleep 1.5\n@sim say second line\n@sim sleep 30', {
      title: 'Live one'
    });
    const row = page.locator(`#run-${id}`);
    await row.waitFor({ timeout: 10_000 });
    await page.locator(`#run-${id} .badge:text("INPROGRESS")`).waitFor({ timeout: 10_000 });
    expect(await row.innerText()).toContain('Live one');
    expect(await page.evaluate(() => (globalThis as { marker?: number }).marker)).toBe(1);

    await row.getByRole('link', { name: 'Live one' }).click();
    await page.getByRole('heading', { name: 'Live one' }).waitFor();
    await page.evaluate(() => ((globalThis as { marker?: number }).marker = 2));
    await page.locator('#transcript:has-text("second line")').waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (globalThis as { marker?: number }).marker)).toBe(2);
    expect(await page.locator('#run-id').inputValue()).toBe(id);
    expect(await page.locator('#cmd-curl').inputValue()).toContain(`/api/v1/agent/runs/${id}`);

    await page.getByText('Cancel run').click();
    await page.getByRole('button', { name: 'Yes, cancel this run' }).click();
    await page.locator('#facts .badge:text("CANCELLED")').waitFor({ timeout: 10_000 });
    expect(await runState(id)).toBe('CANCELLED');
    expect(await page.locator('#cancel').count()).toBe(0);
    await context.close();
  }, 120_000);

  it('filters by state, environment, text and created range, kept in the URL', async () => {
    const a = await createRun('@sim say alpha', { title: 'Filter alpha', environment: 'web' });
    const b = await createRun('@sim say beta', { title: 'Filter beta', environment: 'docs' });
    await finished(a);
    await finished(b);
    const { context, page } = await signedIn();
    await page.getByLabel('Environment').selectOption('docs');
    await page.getByLabel('Text').fill('Filter');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/environment=docs/);
    expect(page.url()).toContain('q=Filter');
    expect(await page.locator(`#run-${b}`).count()).toBe(1);
    expect(await page.locator(`#run-${a}`).count()).toBe(0);

    await page.goto(`${ex.url}/?state=FAILED&q=Filter`);
    expect(await page.locator('#runs tbody tr').count()).toBe(0);
    await page.goto(`${ex.url}/?state=SUCCEEDED&q=alpha`);
    expect(await page.locator(`#run-${a}`).count()).toBe(1);
    expect(await page.locator('#runs tbody tr').count()).toBe(1);
    const today = new Date().toISOString().slice(0, 10);
    await page.goto(`${ex.url}/?q=Filter&from=${today}&to=${today}`);
    expect(await page.locator('#runs tbody tr').count()).toBe(2);
    await page.goto(`${ex.url}/?q=Filter&to=2000-01-01`);
    expect(await page.locator('#runs tbody tr').count()).toBe(0);
    await context.close();
  }, 120_000);

  it('pages newest first by keyset: 25 a page, then the older ones, none twice', async () => {
    const pagerKey = (await ex.key('team-pager', 'personal', 'Pat')).raw;
    const ids: string[] = [];
    for (let i = 0; i < 27; i++)
      ids.push(await createRun(`@sim say page ${i}`, { title: `Page run ${i}`, withKey: pagerKey }));
    const { context, page } = await signedIn(pagerKey);
    const shown = () => page.locator('#runs tbody tr').evaluateAll(rows => rows.map(row => row.id.slice(4)));
    const first = await shown();
    expect(first).toEqual(ids.slice(2).reverse());
    await page.getByRole('link', { name: 'Older runs →' }).click();
    await page.waitForURL(/before=\d+/);
    expect(await shown()).toEqual([ids[1], ids[0]]);
    expect(await page.getByRole('link', { name: 'Older runs →' }).count()).toBe(0);
    await page.getByRole('link', { name: '← Newest runs' }).click();
    expect(await shown()).toEqual(first);
    await context.close();
  }, 120_000);

  it("keeps another team's runs out of the list and answers 404 for them by URL", async () => {
    const otherKey = (await ex.key('other-team', 'personal', 'Eve')).raw;
    const theirs = await createRun('@sim say team secret', { title: 'Other team run', withKey: otherKey });
    const { context, page } = await signedIn();
    expect(await page.locator(`#run-${theirs}`).count()).toBe(0);
    expect(await page.locator('body').innerText()).not.toContain('Other team run');
    const response = await page.goto(`${ex.url}/runs/${theirs}`);
    expect(response!.status()).toBe(404);
    expect(await page.locator('body').innerText()).not.toContain('team secret');
    await context.close();
  }, 120_000);

  it('renders <script>, <img onerror> and javascript: links in prompts and output inert', async () => {
    const evil = [
      'Hi <script>alert(1)</script><img src=x onerror="alert(2)"> <a href="javascript:alert(3)">click</a> [md](javascript:alert(4))',
      '@sim say <img src=http://example.invalid/x onerror=alert(5)><script>alert(6)</script>',
      '@sim run echo "<a href=javascript:alert(7)>x</a><iframe src=javascript:alert(8)>"'
    ].join('\n');
    const id = await createRun(evil, { title: '<img src=x onerror=alert(9)>' });
    await finished(id);
    const { context, page } = await signedIn();
    const dialogs: string[] = [];
    const errors: string[] = [];
    const foreign: string[] = [];
    page.on('dialog', dialog => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on('pageerror', error => errors.push(error.message));
    page.on('request', request => {
      if (!request.url().startsWith(ex.url)) foreign.push(request.url());
    });
    await page.goto(`${ex.url}/`);
    await page.goto(`${ex.url}/runs/${id}`);
    await page.locator('#transcript:has-text("iframe")').waitFor();
    expect(await page.locator('main img, main script, main iframe, a[href^="javascript"]').count()).toBe(0);
    const text = await page.locator('main').innerText();
    expect(text).toContain('<script>alert(1)</script>');
    expect(text).toContain('<img src=http://example.invalid/x onerror=alert(5)>');
    await page.waitForTimeout(300);
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
    await context.close();
  }, 120_000);

  it('refuses a cross-origin POST and one without the CSRF token; the JSON API ignores the cookie', async () => {
    const id = await createRun('@sim sleep 30');
    const { cookie, csrf } = await httpSession();
    const post = (origin: string, token: string) =>
      fetch(`${ex.url}/runs/${id}/cancel`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: token }).toString()
      });
    const crossOrigin = await post('https://evil.example', csrf);
    expect(crossOrigin.status).toBe(403);
    // A client that is not a browser gets the executor's usual problem+json.
    expect(crossOrigin.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await crossOrigin.json()) as { detail: string }).detail).toContain('https://evil.example');
    expect((await post(ex.url, 'forged')).status).toBe(403);
    const noOrigin = await fetch(`${ex.url}/runs/${id}/cancel`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf }).toString()
    });
    expect(noOrigin.status).toBe(403);
    const signIn = await fetch(`${ex.url}/sign-in`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ api_key: key }).toString()
    });
    expect(signIn.status).toBe(403);
    expect(signIn.headers.get('set-cookie')).toBeNull();
    expect(await runState(id)).not.toBe('CANCELLED');
    const api = await fetch(`${ex.url}/api/v1/agent/runs/${id}`, { headers: { cookie } });
    expect(api.status).toBe(401);
    expect((await post(ex.url, csrf)).status).toBe(303);
    expect(await runState(id)).toBe('CANCELLED');
  }, 120_000);

  it('marks the cookie Secure behind https and takes the public URL as this site', async () => {
    const behind = await startTestExecutor({ server: { public_url: 'https://runs.example' } });
    try {
      const raw = (await behind.key()).raw;
      const response = await fetch(`${behind.url}/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: 'https://runs.example', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ api_key: raw }).toString()
      });
      expect(response.status).toBe(303);
      const cookie = response.headers.get('set-cookie')!;
      expect(cookie).toMatch(/^agent_run_session=[A-Za-z0-9_-]{43}; /);
      expect(cookie).toContain('; HttpOnly');
      expect(cookie).toContain('; SameSite=Strict');
      expect(cookie).toContain('; Secure');
      expect(cookie).toMatch(/; Max-Age=\d+/);
    } finally {
      await behind.stop(1000);
    }
  }, 120_000);

  it("ends a revoked key's session at once", async () => {
    const issued = await ex.key('default', 'personal', 'Temporary');
    const { context, page } = await signedIn(issued.raw);
    const id = await createRun('@sim say kept', { withKey: issued.raw });
    expect((await page.goto(`${ex.url}/runs/${id}`))!.status()).toBe(200);
    await page.goto(`${ex.url}/`);
    await page.locator('#live-status:text("Live")').waitFor();
    const store = await ex.openStore();
    try {
      expect(await store.accounts.revokeKey(issued.id, new Date().toISOString())).toBe(true);
      // The live list learns it at the next change it would have shown, and shows the sign-in form.
      const after = await createRun('@sim say after the revocation', { title: 'After revocation' });
      await page.getByLabel('API key').waitFor({ timeout: 10_000 });
      expect(await page.locator(`#run-${after}`).count()).toBe(0);
    } finally {
      await store.close();
    }
    // Every page asks for a sign-in again.
    await page.goto(`${ex.url}/`);
    expect(await page.getByLabel('API key').count()).toBe(1);
    await page.goto(`${ex.url}/runs/${id}`);
    await page.getByLabel('API key').waitFor();
    // The sign-in form would bring the browser back to that run, once signed in again.
    expect(page.url()).toBe(`${ex.url}/?next=${encodeURIComponent(`/runs/${id}`)}`);
    expect(await page.locator('body').innerText()).not.toContain('kept');
    await context.close();
  }, 120_000);

  it('lists the environments without secrets, with queued and running runs, and the nodes alive or silent', async () => {
    const running = await createRun('@sim sleep 30', { title: 'Env check', environment: 'docs' });
    await waitForState({ on: ex, key, id: running }, ['INPROGRESS']);
    const store = await ex.openStore();
    try {
      await store.nodes.reportNode(
        {
          node_id: 'gone-node-1',
          role: 'worker',
          workers: 4,
          busy: 1,
          started_at: new Date(Date.now() - 3_600_000).toISOString(),
          seen_at: Date.now() - 60_000
        },
        0
      );
    } finally {
      await store.close();
    }
    const { context, page } = await signedIn();
    await page.getByRole('link', { name: 'Environments' }).click();
    await page.getByRole('heading', { name: 'Environments' }).waitFor();
    const text = await page.locator('main').innerText();
    expect(text).not.toContain('value-never-shown');
    expect(text).not.toContain('DASHBOARD_TEST_SECRET');
    expect(text).not.toContain('hidden-setup-command');
    const docs = page.locator('tr', { has: page.getByRole('link', { name: 'docs', exact: true }) });
    expect(await docs.locator('td[data-label="Running"]').innerText()).toBe('1');
    expect(await page.locator('#node-gone-node-1').innerText()).toContain('silent');
    const own = page.locator('tbody tr[id^="node-"]', { hasText: 'alive' });
    expect(await own.count()).toBe(1);
    expect(await own.innerText()).toMatch(/all\s+\d+ busy, \d+ free/);
    await page.goto(`${ex.url}/runs/${running}`);
    await page.getByText('Cancel run').click();
    await page.getByRole('button', { name: 'Yes, cancel this run' }).click();
    await page.locator('#facts .badge:text("CANCELLED")').waitFor();
    await context.close();
  }, 120_000);

  it('returns to the page a signed-out deep link asked for after sign-in, and only to a path of its own', async () => {
    const id = await createRun('@sim say deep', { title: 'Deep link' });
    await finished(id);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${ex.url}/runs/${id}?tab=1`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Deep link' }).waitFor();
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe(`/runs/${id}?tab=1`);
    await context.close();
    // A filtered list asked for while signed out comes back with its filters.
    const other = await browser.newContext();
    const list = await other.newPage();
    await list.goto(`${ex.url}/?q=Deep`);
    await list.getByLabel('API key').fill(key);
    await list.getByRole('button', { name: 'Sign in' }).click();
    await list.getByRole('heading', { name: 'Runs' }).waitFor();
    expect(new URL(list.url()).search).toBe('?q=Deep');
    expect(await list.locator(`#run-${id}`).count()).toBe(1);
    await other.close();
    for (const next of [
      '//evil.example/x',
      'https://evil.example/',
      '/\\evil.example',
      'javascript:alert(1)'
    ]) {
      const response = await fetch(`${ex.url}/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: ex.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ api_key: key, next }).toString()
      });
      expect({ next, location: response.headers.get('location') }).toEqual({ next, location: '/' });
    }
  }, 120_000);

  it('keeps a multi-line status message on its lines', async () => {
    const { failed } = await shownRuns();
    const { context, page } = await signedIn();
    await page.goto(`${ex.url}/runs/${failed}`);
    const status = page.locator('#facts tr', { hasText: 'Status' }).locator('td');
    expect(await status.innerText()).toMatch(/first problem\nsecond problem/);
    await context.close();
  }, 120_000);

  it('links the shareable session page of a run', async () => {
    const { failed } = await shownRuns();
    const { context, page } = await signedIn();
    await page.goto(`${ex.url}/runs/${failed}`);
    const record = (await (await ex.request(`/api/v1/agent/runs/${failed}`, { key })).json()) as {
      session_link: string;
    };
    expect(await page.locator('#session-link').getAttribute('href')).toBe(record.session_link);
    await context.close();
  }, 120_000);

  it("shows the usage and cost figures the run's agent reported", async () => {
    const { failed } = await shownRuns();
    const { context, page } = await signedIn();
    await page.goto(`${ex.url}/runs/${failed}`);
    const usage = await page.locator('#usage').innerText();
    expect(usage).toMatch(/inference cost\s+0\.5/);
    expect(usage).toMatch(/compute cost\s+0\.25/);
    await context.close();
  }, 120_000);

  it('shows `backticks` in artifact descriptions as code', async () => {
    const { changed } = await shownRuns();
    const { context, page } = await signedIn();
    await page.goto(`${ex.url}/runs/${changed}`);
    const artifact = page.locator('.artifacts li');
    expect(await artifact.locator('code').innerText()).toBe('git apply changes.patch');
    expect(await artifact.innerText()).not.toContain('`');
    await context.close();
  }, 120_000);

  it('writes durations as configuration durations (30m, 2s), not as seconds', async () => {
    const { changed } = await shownRuns();
    const { context, page } = await signedIn();
    await page.goto(`${ex.url}/runs/${changed}`);
    const took = await page.locator('#facts tr', { hasText: 'Duration' }).locator('td').innerText();
    expect(took).toMatch(/^\d+s$/);
    await page.goto(`${ex.url}/environments`);
    const metered = page.locator('tr', { has: page.getByRole('link', { name: 'metered', exact: true }) });
    expect(await metered.locator('td[data-label="Time limit"]').innerText()).toBe('30m');
    await context.close();
  }, 120_000);

  it('takes the created dates in the format the list shows (YYYY-MM-DD), not the locale picker', async () => {
    const { changed } = await shownRuns();
    const { context, page } = await signedIn();
    await page.goto(`${ex.url}/?q=Made%20notes`);
    const from = page.getByLabel('Created from');
    expect(await from.getAttribute('type')).toBe('text');
    expect(await from.getAttribute('placeholder')).toBe('YYYY-MM-DD');
    const created = await page.locator(`#run-${changed} td[data-label="Created"]`).innerText();
    expect(created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    await from.fill(created.slice(0, 10));
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/from=\d{4}-\d{2}-\d{2}/);
    expect(await page.locator(`#run-${changed}`).count()).toBe(1);
    expect(await page.getByLabel('Created from').inputValue()).toBe(created.slice(0, 10));
    await context.close();
  }, 120_000);

  it('takes the screenshots for the README, at desktop and phone width', async () => {
    // Into docs/ only when asked (UPDATE_SCREENSHOTS=1), so a test run leaves the checkout as it was.
    const shots = process.env.UPDATE_SCREENSHOTS ? 'docs' : tempDir('dashboard-shots-');
    const done = await createRun(
      [
        'Add a greeting to the README',
        '@sim say Adding a line to README.md',
        '@sim run cat README.md',
        '@sim write README.md hello\\nand welcome',
        '@sim result Added a greeting.'
      ].join('\n'),
      { title: 'Add a greeting to the README' }
    );
    await finished(done);
    await createRun('@sim sleep 30', { title: 'Upgrade the test runner', environment: 'docs' });
    for (const [name, viewport] of [
      ['desktop', { width: 1280, height: 800 }],
      ['phone', { width: 390, height: 844 }]
    ] as const) {
      const { context, page } = await signedIn(key, viewport);
      await page.screenshot({ path: join(shots, `dashboard-runs-${name}.png`), fullPage: false });
      await page.goto(`${ex.url}/runs/${done}`);
      await page.screenshot({ path: join(shots, `dashboard-run-${name}.png`), fullPage: true });
      const href = await page.getByRole('link', { name: 'changes.patch' }).getAttribute('href');
      const download = await context.request.get(`${ex.url}${href}`);
      expect(download.status()).toBe(200);
      expect(await download.text()).toContain('+and welcome');
      await context.close();
    }
  }, 120_000);
});
