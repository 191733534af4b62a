// The session page in a real browser (headless Chromium driven by playwright-core): a real run's
// prompt, commands with exit codes, diff and agent output render, and injected HTML stays text.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';
import { type SeenRun, waitForState } from '../support/wait.js';

let browser: Browser;
let ex: TestExecutor;
let key: string;

beforeAll(async () => {
  browser = await launchBrowser();
  const source = tempDir('browser-source-');
  writeFileSync(join(source, 'README.md'), 'hello\n');
  ex = await startTestExecutor({ environments: [{ id: 'web', source }] });
  key = (await ex.key()).raw;
}, 60_000);
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
  }, 30_000);

  it('shows nothing of the run for a wrong token', async () => {
    const run = await finishedRun('@sim say secret stuff');
    const page = await browser.newPage();
    const response = await page.goto(run.session_link.replace(/token=[^&]+/, 'token=forged'));
    expect(response?.status()).toBe(404);
    expect(await page.locator('body').innerText()).not.toContain('secret stuff');
    await page.close();
  });
});
