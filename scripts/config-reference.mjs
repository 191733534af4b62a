// Writes the configuration reference of docs/configuration.md (between its markers) from the
// schema in src/executor/config/schema.ts: `npm run docs:config`. The source runs with its types
// stripped (--experimental-transform-types, as reliability/cost.mjs runs it); the hook below maps
// the source's `.js` imports to its `.ts` files.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      const source = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
      if (existsSync(fileURLToPath(source))) return next(source.href, context);
    }
    return next(specifier, context);
  }
});

const root = join(import.meta.dirname, '..');
const page = join(root, 'docs/configuration.md');
const { withReference } = await import('../src/executor/config/reference.ts');
const before = readFileSync(page, 'utf8');
const after = withReference(before);
if (after === before) console.log('docs/configuration.md: the reference is up to date');
else {
  writeFileSync(page, after);
  console.log('docs/configuration.md: the reference was written from the schema');
}
