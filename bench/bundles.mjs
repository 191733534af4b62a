// Bundle sizes, measured from dist/ (what `npm run build` produced and what users download), never
// typed by hand: every .js file of each bundle's folder, the entry and the chunks it loads.
//
//   node bench/bundles.mjs

import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, saveResult } from './lib.mjs';

const BUNDLES = {
  action: { dir: 'dist', entry: 'index.js' },
  executor: { dir: 'dist/executor', entry: 'index.js' },
  'executor-action': { dir: 'dist/executor-action', entry: 'index.js' },
  cli: { dir: 'dist/cli', entry: 'index.js' }
};

const bundles = {};
for (const [name, { dir, entry }] of Object.entries(BUNDLES)) {
  const files = Object.fromEntries(
    readdirSync(join(ROOT, dir))
      .filter(file => file.endsWith('.js'))
      .sort()
      .map(file => [file, statSync(join(ROOT, dir, file)).size])
  );
  if (!(entry in files)) throw new Error(`${dir}/${entry} is missing: run npm run build first`);
  const bytes = Object.values(files).reduce((sum, size) => sum + size, 0);
  bundles[name] = { dir, entry, bytes, megabytes: Math.round(bytes / 10_000) / 100, files };
  console.log(`${name}: ${bundles[name].megabytes} MB (${dir}/*.js, ${Object.keys(files).length} files)`);
}
saveResult('bundles', { command: 'node bench/bundles.mjs', unit: 'bytes (MB = 10^6 bytes)', bundles });
