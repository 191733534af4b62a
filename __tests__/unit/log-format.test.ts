// The executor's text log (log_format: text, or auto on a terminal): what a record carries from a
// run or a client never reaches the terminal as a control sequence.
import { describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { logStream } from '../../src/executor/telemetry/log-format.js';

describe('the text log format', () => {
  it('writes control characters of a message and of its fields as escapes', () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, logStream('text', { write: chunk => lines.push(chunk) }) as never);
    // ESC [2J clears the screen; C1 CSI (0x9b) does the same on terminals that take 8-bit codes.
    log.warn({ reason: 'bad\u009b2J\u0007', run_id: 'r1' }, 'run failed: \u001b[2J\u001b]0;owned\u0007 done');
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toContain('run failed: \\u001b[2J\\u001b]0;owned\\u0007 done');
    expect(line).toContain('reason=bad\\u009b2J\\u0007');
    expect(line).toContain('run_id=r1');
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    expect(line!.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(line!.endsWith('\n')).toBe(true);
  });
});
