// Entry of the bundled executor (dist/executor/index.js, the `agent-executor` bin). It checks the
// Node version and node:sqlite before loading anything else, so an old Node gets one clear message
// saying how to get Node 24, not a stack trace.

const NEEDED_MAJOR = 24;

/** The one line for a Node that cannot run the executor (the README says the same). */
export function wrongNodeMessage(version: string): string {
  return (
    `agent-executor needs Node.js ${NEEDED_MAJOR} (it uses node:sqlite); this is Node ${version}. ` +
    'Get it one of these ways: in a clone after `npm ci`, `npx agent-executor ...` runs it on the Node 24 ' +
    'of the `node` dev dependency; in a workflow, `actions/setup-node` with `node-version: 24`; ' +
    'elsewhere, install Node 24 (https://nodejs.org/ or `nvm install 24`).'
  );
}

async function start(): Promise<void> {
  const major = Number(/^v(\d+)\./.exec(process.version)?.[1] ?? 0);
  let sqlite = major >= NEEDED_MAJOR;
  if (sqlite) {
    try {
      await import('node:sqlite');
    } catch {
      sqlite = false;
    }
  }
  if (!sqlite) {
    console.error(wrongNodeMessage(process.version));
    process.exit(1);
  }
  const { main } = await import('./node/cli.js');
  process.exitCode = await main(process.argv.slice(2));
}

void start();
