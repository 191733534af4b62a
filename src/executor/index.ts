// Entry of the bundled executor (dist/executor/index.js, the `agent-executor` bin). It checks for
// node:sqlite before loading anything else, so an old Node gets one clear line, not a stack trace.

async function start(): Promise<void> {
  try {
    await import('node:sqlite');
  } catch {
    console.error(
      `agent-executor needs Node.js 22.5 or newer (for node:sqlite); this is Node ${process.version}.`
    );
    process.exit(1);
  }
  const { main } = await import('./cli.js');
  process.exitCode = await main(process.argv.slice(2));
}

void start();
