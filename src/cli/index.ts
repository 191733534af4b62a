#!/usr/bin/env node
// The `agent-run` command line: the bin's entry point, so that everything else is importable and testable.
import { main } from './main.js';

// A reader that stops early (`agent-run logs ID | head`) closes the pipe: end quietly, as a
// command-line tool does, instead of an unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

process.exitCode = await main(process.argv.slice(2));
