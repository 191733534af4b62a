// One way to start a headless Chromium for the browser tests, on any machine: the system's
// Chromium when it has one (/usr/bin/chromium, or CHROMIUM_PATH), otherwise the binary that ships
// inside the @sparticuz/chromium npm package (unpacked to /tmp on first use), so `npm ci && npm
// test` needs nothing installed outside npm.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

const SYSTEM_CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync'
];

/** The Chromium this machine will use: the system's, or the npm package's (unpacked on demand). */
export async function chromiumPath(): Promise<{ path: string; source: 'system' | 'npm' }> {
  if (existsSync(SYSTEM_CHROMIUM)) return { path: SYSTEM_CHROMIUM, source: 'system' };
  const { default: packaged } = await import('@sparticuz/chromium');
  return { path: await packaged.executablePath(), source: 'npm' };
}

/** Launches a headless Chromium driven by playwright-core. */
export async function launchBrowser(): Promise<Browser> {
  const { path, source } = await chromiumPath();
  try {
    return await chromium.launch({ executablePath: path, headless: true, args: FLAGS });
  } catch (error) {
    throw new Error(
      `could not start Chromium from ${path} (${source === 'system' ? 'the system' : 'the @sparticuz/chromium package'}): ${(error as Error).message}`
    );
  }
}
