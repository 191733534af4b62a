// The dashboard across processes: the bundled executor as `serve --role api` (it serves the
// dashboard) and `serve --role worker` (it runs the work) on one SQLite file. The run's state and
// transcript, written by the worker process, reach the browser live through the API process's
// change notifications, and /environments shows both nodes by their heartbeats (the worker as
// silent once it is gone).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { eventually } from '../support/eventually.js';
import { type ExecutorProcess, executorCli, spawnExecutor, tempDir } from '../support/executor.js';

let browser: Browser;
let dir: string;
let config: string;
let key: string;
let api: ExecutorProcess;
let worker: ExecutorProcess;

beforeAll(async () => {
  browser = await launchBrowser();
  dir = tempDir('dashboard-nodes-');
  mkdirSync(join(dir, 'source'));
  config = join(dir, 'agent-executor.yaml');
  writeFileSync(
    config,
    ['workers: 2', 'log_level: warn', 'environments:', '  - id: sim', '    source: source', ''].join('\n')
  );
  const created = await executorCli(
    ['keys', 'create', '--kind', 'personal', '--name', 'Nia', '--config', config],
    {
      cwd: dir
    }
  );
  expect(created.code).toBe(0);
  key = created.stdout.trim().split('\n').at(-1)!;
  api = await spawnExecutor(['--config', config, '--role', 'api'], { cwd: dir });
  worker = await spawnExecutor(['--config', config, '--role', 'worker'], { cwd: dir });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await worker?.stop('SIGKILL');
  await api?.stop('SIGKILL');
});

describe('dashboard across an api and a worker process on one SQLite file', () => {
  it("shows the worker's progress live and both nodes by their heartbeats", async () => {
    const page = await browser.newPage();
    await page.goto(`${api.url}/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#live-status:text("Live")').waitFor();

    const response = await fetch(`${api.url}/api/v1/agent/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: '@sim say from the worker\n@sim sleep 1.5\n@sim say still going\n@sim sleep 30',
        title: 'Across nodes',
        config: { environment_id: 'sim' }
      })
    });
    expect(response.status).toBe(200);
    const { run_id } = (await response.json()) as { run_id: string };
    await page.locator(`#run-${run_id} .badge:text("INPROGRESS")`).waitFor({ timeout: 15_000 });

    await page.getByRole('link', { name: 'Across nodes' }).click();
    await page.locator('#transcript:has-text("from the worker")').waitFor({ timeout: 10_000 });
    await page.locator('#transcript:has-text("still going")').waitFor({ timeout: 10_000 });

    // A report is at most one heartbeat (5 s) old: look again until the busy worker shows.
    const workerRow = page.locator('tbody tr[id^="node-"]', { hasText: 'worker' });
    await eventually(
      async () => {
        await page.goto(`${api.url}/environments`);
        return (await workerRow.innerText()).includes('1 busy, 1 free');
      },
      { what: 'the worker node to report 1 busy worker', timeoutMs: 15_000 }
    );
    expect(await page.locator('tbody tr[id^="node-"]', { hasText: 'alive' }).count()).toBe(2);
    expect(await page.locator('tbody tr[id^="node-"]', { hasText: 'api' }).innerText()).toContain(
      '0 busy, 0 free'
    );

    await worker.stop('SIGKILL');
    await page.waitForTimeout(16_000);
    await page.reload();
    expect(await workerRow.innerText()).toContain('silent');
    await page.close();
  }, 120_000);
});
