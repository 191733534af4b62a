// A jest reporter that ends every run with what it cost: the 15 slowest files (each with its
// project) and the run's wall time, test count and files, so a file that grows slow is seen.
import { writeFileSync } from 'node:fs';

const SHOWN = 15;

export default class SlowestReporter {
  onRunStart(results) {
    this.started = results.startTime || Date.now();
  }

  onRunComplete(contexts, results) {
    const files = results.testResults.map(file => ({
      seconds: (file.perfStats.end - file.perfStats.start) / 1000,
      name: file.testFilePath.replace(`${process.cwd()}/`, ''),
      project: file.displayName?.name ?? ''
    }));
    files.sort((a, b) => b.seconds - a.seconds);
    const wall = (Date.now() - this.started) / 1000;
    const lines = [`\nThe ${Math.min(SHOWN, files.length)} slowest test files:`];
    for (const file of files.slice(0, SHOWN))
      lines.push(
        `  ${file.seconds.toFixed(1).padStart(6)} s  ${file.name}${file.project ? ` [${file.project}]` : ''}`
      );
    lines.push(
      `jest: ${results.numTotalTests} tests in ${results.numTotalTestSuites} files, ${wall.toFixed(1)} s wall time ` +
        `(${files.reduce((sum, file) => sum + file.seconds, 0).toFixed(1)} s of files)`
    );
    // Under `npm test` (scripts/test.mjs) the lines go to a file it prints last, after every check.
    const file = process.env.AGENT_RUN_TEST_COST_FILE;
    if (file) writeFileSync(file, `${lines.join('\n')}\n`);
    else process.stderr.write(`${lines.join('\n')}\n`);
  }
}
