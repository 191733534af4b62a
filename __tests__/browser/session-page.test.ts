// The session page in a real browser (headless Chromium driven by playwright-core): a real run's
// prompt, commands with exit codes, diff and agent output render, and injected HTML stays text. It
// is the dashboard's run renderer: the result as text, the diff in colour, artifacts that download
// with the page's own token, no event as raw JSON, and no control character of the agent's output.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { type SeenRun, waitForState } from '../support/wait.js';

/** The page's window, as far as these tests use it (the DOM types are not in this project's lib). */
interface Styled {
  getComputedStyle(node: unknown): { backgroundColor: string };
}

let browser: Browser;
let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  browser = await launchBrowser();
  const source = tempDir('browser-source-');
  writeFileSync(join(source, 'README.md'), 'hello\n');
  ex = await startTestExecutor({ environments: [{ id: 'web', source }] });
  key = (await ex.key()).raw;
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await ex?.stop(1000);
});

async function finishedRun(prompt: string): Promise<{ session_link: string; run_id: string }> {
  const created = await ex.request('/api/v1/agent/run', {
    method: 'POST',
    key,
    body: JSON.stringify({ prompt, title: 'Browser <i>check</i>', config: { environment_id: 'web' } })
  });
  const { run_id } = (await created.json()) as { run_id: string };
  const run = await waitForState<SeenRun & { session_link: string }>({ on: ex, key, id: run_id });
  return { ...run, run_id };
}

describe('session page in Chromium', () => {
  it('shows prompt, commands with exit codes, the diff and agent output, with injected HTML as text', async () => {
    const run = await finishedRun(
      [
        'Fix it <script>window.injected = true</script><img src=x onerror="window.injected = true">',
        '@sim say I am <b>bold</b>',
        '@sim run echo checked && exit 0',
        '@sim write README.md hello again',
        '@sim run false'
      ].join('\n')
    );
    const page = await browser.newPage();
    const response = await page.goto(run.session_link);
    expect(response?.status()).toBe(200);
    expect(await page.title()).toBe('Browser <i>check</i>');
    expect(await page.evaluate(() => (globalThis as { injected?: boolean }).injected)).toBeUndefined();
    expect(await page.locator('script, img, b:text("bold")').count()).toBe(0);
    const text = await page.locator('body').innerText();
    expect(text).toContain('Fix it <script>window.injected = true</script>');
    expect(text).toContain('I am <b>bold</b>');
    expect(text).toMatch(/command echo checked && exit 0 → exit 0\s+checked/);
    expect(text).toContain('command false → exit 1');
    expect(text).toContain('files changed: README.md modified');
    expect(text).toContain('-hello\n+hello again');
    expect(text).toContain('command `false` exited with code 1');
    await page.screenshot({ path: join(tempDir('session-shot-'), 'session.png'), fullPage: true });
    await page.close();
  }, 120_000);

  it('shows the result as text, the diff in colour and the artifacts as download links', async () => {
    const run = await finishedRun(
      ['@sim write README.md hello again', '@sim result The <b>answer</b>\\nsecond line'].join('\n')
    );
    const page = await browser.newPage();
    expect((await page.goto(run.session_link))?.status()).toBe(200);
    expect(await page.locator('#result').innerText()).toBe('The <b>answer</b>\nsecond line');
    const added = page.locator('pre.diff span.d-add', { hasText: '+hello again' });
    const deleted = page.locator('pre.diff span.d-del', { hasText: '-hello' });
    expect(await added.count()).toBe(1);
    expect(await deleted.count()).toBe(1);
    const background = (selector: string) =>
      page
        .locator(selector)
        .first()
        .evaluate(node => (globalThis as unknown as Styled).getComputedStyle(node).backgroundColor);
    const [add, del] = [await background('span.d-add'), await background('span.d-del')];
    expect(add).not.toBe('rgba(0, 0, 0, 0)');
    expect(del).not.toBe('rgba(0, 0, 0, 0)');
    expect(add).not.toBe(del);

    const link = page.locator('#artifacts a', { hasText: 'changes.patch' });
    expect(await link.count()).toBe(1);
    const href = new URL((await link.getAttribute('href'))!, page.url());
    const download = await fetch(href);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toContain('filename="changes.patch"');
    expect(await download.text()).toContain('+hello again');
    await page.close();
  }, 120_000);

  it("downloads no artifact with a wrong token, nor another run's artifact with this run's token", async () => {
    const [mine, theirs] = [
      await finishedRun('@sim write README.md mine'),
      await finishedRun('@sim write README.md theirs')
    ];
    const uidOf = async (run: { run_id: string }) => {
      const transcript = (await (
        await ex.request(`/api/v1/agent/runs/${run.run_id}/transcript`, { key })
      ).json()) as { events: { kind: string; artifact_uid?: string }[] };
      return transcript.events.find(event => event.kind === 'artifact')!.artifact_uid!;
    };
    const token = new URL(mine.session_link).searchParams.get('token')!;
    const base = mine.session_link.split('?')[0]!;
    const at = (uid: string, t: string) => fetch(`${base}/artifacts/${uid}?token=${encodeURIComponent(t)}`);
    const own = await uidOf(mine);
    expect((await at(own, token)).status).toBe(200);
    const forged = await at(own, 'forged');
    expect(forged.status).toBe(404);
    expect(await forged.text()).not.toContain('mine');
    const other = await at(await uidOf(theirs), token);
    expect(other.status).toBe(404);
    expect(await other.text()).not.toContain('theirs');
  }, 120_000);

  it('shows no event as raw JSON, no internal field and no control character', async () => {
    const run = await finishedRun(
      [
        '@sim say \u001b[31mred\u001b[0m alert\u0007 and null\u0000 here',
        '@sim write notes.md a note',
        '@sim result done'
      ].join('\n')
    );
    const transcript = (await (
      await ex.request(`/api/v1/agent/runs/${run.run_id}/transcript`, { key })
    ).json()) as { events: { kind: string; artifact_uid?: string }[] };
    const uid = transcript.events.find(event => event.kind === 'artifact')!.artifact_uid!;
    const page = await browser.newPage();
    expect((await page.goto(run.session_link))?.status()).toBe(200);
    const text = await page.locator('body').innerText();
    expect(text).toContain('red alert\uFFFD and null\uFFFD here');
    expect(text).toMatch(/artifact changes\.patch \d+ bytes/);
    // Fields meant for programs: the event's seq and kind, the artifact's id, the result's source.
    for (const internal of ['"seq"', '"kind"', '"at"', 'artifact_uid', uid, '{"'])
      expect([internal, text.includes(internal)]).toEqual([internal, false]);
    const html = await page.content();
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(html.match(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g)).toBeNull();
    await page.close();
  }, 120_000);

  it('shows nothing of the run for a wrong token', async () => {
    const run = await finishedRun('@sim say secret stuff');
    const page = await browser.newPage();
    const response = await page.goto(run.session_link.replace(/token=[^&]+/, 'token=forged'));
    expect(response?.status()).toBe(404);
    expect(await page.locator('body').innerText()).not.toContain('secret stuff');
    await page.close();
  });
});
