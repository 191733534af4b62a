// Where the executor's log lines go and in which shape: pino's JSON lines for machines (a pipe, a
// file, a log collector), or one readable line per record for a person watching a terminal. The
// `log_format` config key chooses (auto: text when stderr is a terminal, JSON otherwise).

export type LogFormat = 'auto' | 'text' | 'json';

interface Output {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL'
};

/** Fields every record has, shown in the line's head rather than as key=value. */
const HEAD = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** The stream pino writes to: `out` itself for JSON, or a translator to text lines. */
export function logStream(format: LogFormat, out: Output = process.stderr): Output {
  const text = format === 'text' || (format === 'auto' && out.isTTY === true);
  if (!text) return out;
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line !== '') out.write(`${inert(textLine(line))}\n`);
      return true;
    }
  };
}

/**
 * A line for a terminal with every control character (C0, DEL, C1) written as its `\u` escape: a
 * message may carry what a run or a client sent (a run's error, a CLI's words), and none of it may
 * move the cursor, retitle the window or hide the lines before it.
 */
export function inert(line: string): string {
  return line.replace(
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    /[\u0000-\u001f\u007f-\u009f]/g,
    c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
  );
}

/** One JSON record as `HH:MM:SS.mmmZ LEVEL message key=value …`; a line that is not JSON as it is. */
export function textLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  if (record === null || typeof record !== 'object') return json;
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11) : '';
  const level = LEVELS[record.level as number] ?? String(record.level ?? '');
  const parts = [time, level.padEnd(5), String(record.msg ?? '')];
  for (const [key, value] of Object.entries(record)) {
    if (HEAD.has(key) || value === undefined) continue;
    parts.push(`${key}=${showValue(key, value)}`);
  }
  return parts.filter(part => part !== '').join(' ');
}

function showValue(key: string, value: unknown): string {
  // An error's message says what went wrong; its stack is for the JSON format.
  if (key === 'err' && value !== null && typeof value === 'object' && 'message' in value)
    return JSON.stringify(String((value as { message: unknown }).message));
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value);
}
