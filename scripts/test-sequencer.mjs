// The order jest starts test files in, so that a parallel run does not end waiting on one slow file
// started last: the files an earlier run on this machine timed, slowest first (jest's own cache, in
// node_modules/.cache/jest);
// files never timed (a fresh clone, as in CI) by how slow their folder's files tend to be — real
// executors, child processes and browsers before unit tests — then the larger file first.
import sequencer from '@jest/test-sequencer';
import { statSync } from 'node:fs';
import { relative, sep } from 'node:path';

const Sequencer = sequencer.default ?? sequencer;

/** Seconds a file of each folder of __tests__ took on average, as a rough measure for untimed files. */
const FOLDER_SECONDS = {
  e2e: 20,
  reliability: 20,
  browser: 15,
  sandbox: 10,
  executor: 8,
  cli: 6,
  integration: 3,
  unit: 1
};

export default class SlowestFirst extends Sequencer {
  sort(tests) {
    const estimate = test => {
      const timed = this.time(test);
      if (timed > 0) return timed / 1000;
      const folder = relative(test.context.config.rootDir, test.path).split(sep)[1];
      const bytes = statSync(test.path).size;
      return (FOLDER_SECONDS[folder] ?? 5) * (1 + bytes / 50000);
    };
    const keyed = tests.map(test => ({ test, seconds: estimate(test) }));
    keyed.sort((a, b) => b.seconds - a.seconds);
    return keyed.map(entry => entry.test);
  }
}
