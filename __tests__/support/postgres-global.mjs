// Jest's global set-up of the `postgres` project: one PostgreSQL server for the whole test run,
// started before the first worker, so every file of the project makes databases on it instead of
// starting a server of its own. Its address reaches the workers in AGENT_RUN_TEST_POSTGRES (they are
// started after this, with this process's environment); the teardown below stops it.
//
// Jest loads global set-up with Node's own loader, without the tests' module mapping: postgres.ts
// is loaded with Node's type stripping, and its `./x.js` imports are pointed at the `.ts` files.
import { registerHooks } from 'node:module';

export const SHARED_POSTGRES = 'AGENT_RUN_TEST_POSTGRES';

let hooked = false;
function tsImports() {
  if (hooked) return;
  hooked = true;
  const support = new URL('./', import.meta.url).href;
  registerHooks({
    resolve(specifier, context, next) {
      if (context.parentURL?.startsWith(support) && /^\.\.?\/.*\.js$/.test(specifier))
        return next(specifier.replace(/\.js$/, '.ts'), context);
      return next(specifier, context);
    }
  });
}

let server;

export async function setup() {
  tsImports();
  const { startPostgres } = await import('./postgres.ts');
  server = await startPostgres();
  process.env[SHARED_POSTGRES] = JSON.stringify({ url: server.url(), dataDir: server.dataDir });
}

export async function teardown() {
  await server?.destroy();
  server = undefined;
}

export default setup;
