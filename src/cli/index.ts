#!/usr/bin/env node
// The `agent-run` command line: the bin's entry point, so that everything else is importable and testable.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
