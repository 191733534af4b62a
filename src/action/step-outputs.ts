// Step outputs within GitHub's limits. GitHub keeps at most 1 MiB per output (and the runner
// rejects a step whose outputs are far larger), while every output here can carry what the service
// sent: a 3 MB status message, a huge branch name, a run record nested a million levels deep. So
// each output has a byte budget well under 1 MiB, a cut is announced once per output with a notice
// naming it, and JSON that cannot be written (too deep for JSON.stringify) costs that one output.

import * as core from '@actions/core';

/** Bytes kept per output unless listed below: far more than any id, state, link or message needs. */
export const DEFAULT_OUTPUT_BYTES = 256 * 1024;

/** Outputs that may be large by nature; `run` and `artifacts` are cut as JSON before they get here. */
export const OUTPUT_BYTES: Record<string, number> = {
  result: 512 * 1024,
  'structured-output': 512 * 1024,
  run: 900 * 1024,
  runs: 900 * 1024,
  artifacts: 900 * 1024,
  findings: 900 * 1024
};

/** Outputs whose value is JSON: a cut would break it, so an oversized value leaves them empty. */
const JSON_OUTPUTS = new Set(['structured-output', 'run', 'runs', 'artifacts', 'usage', 'findings']);

/** Cuts text to at most `limit` UTF-8 bytes without splitting a character. */
export function capBytes(text: string, limit: number): { text: string; cut: boolean } {
  if (text.length <= limit / 4) return { text, cut: false };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return { text, cut: false };
  let end = limit;
  // Back up to the start of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), cut: true };
}

/** Sets one output, cut to its budget with a notice that names it. */
export function setOutput(name: string, value: string): void {
  const limit = OUTPUT_BYTES[name] ?? DEFAULT_OUTPUT_BYTES;
  const capped = capBytes(value, limit);
  if (!capped.cut) return core.setOutput(name, value);
  const size = Buffer.byteLength(value);
  if (JSON_OUTPUTS.has(name)) {
    core.notice(`The ${name} output would be ${size} bytes, over its ${limit}-byte limit; it is left empty.`);
    return core.setOutput(name, '');
  }
  core.notice(
    `The ${name} output is ${size} bytes; it holds its first ${limit} (GitHub keeps at most 1 MiB per output).`
  );
  core.setOutput(name, capped.text);
}

/** JSON text of a value, or undefined when it cannot be written (nested too deeply, a cycle). */
export function toJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
