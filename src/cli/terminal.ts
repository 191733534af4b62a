// What `agent-run` writes and how: results on stdout, everything a person watches on stderr.
// A spinner and colour only when stderr is a terminal (colour never with NO_COLOR); plain lines
// otherwise, so logs and pipes stay readable. Every line passes through `visible` (control
// characters in data shown, not sent) unless --raw; only the terminal's own colour is applied after.

import { formatDuration } from '../client/index.js';
import type { ProgressItem } from '../client/index.js';
import { visible, visibleJson } from './visible.js';

/** A line with a colour of ours: the text is cleaned, then the colour is added (on a colour terminal). */
export interface Painted {
  style: string;
  text: string;
}

export type Line = string | Painted;

export interface Streams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Command output shown live is cut to this many lines; `logs` shows it whole. */
const LIVE_OUTPUT_LINES = 20;

export class Terminal {
  readonly tty: boolean;
  readonly color: boolean;
  private spinner?: ReturnType<typeof setInterval>;
  private status = '';
  /** `--raw`: write data as it came, control characters included. */
  raw = false;

  constructor(private readonly streams: Streams) {
    this.tty = streams.stderr.isTTY === true;
    this.color = this.tty && (streams.env.NO_COLOR ?? '') === '' && streams.env.TERM !== 'dumb';
  }

  /** A result line on stdout. */
  out(line: Line): void {
    const text = this.render(line);
    this.streams.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** A value as JSON on stdout (`--json`), with DEL and C1 controls escaped unless --raw. */
  json(value: unknown, indent?: number): void {
    this.streams.stdout.write(
      `${this.raw ? JSON.stringify(value, null, indent) : visibleJson(value, indent)}\n`
    );
  }

  /** A line for the person watching, on stderr. */
  note(line: Line): void {
    this.clearStatus();
    this.streams.stderr.write(`${this.render(line)}\n`);
    this.drawStatus();
  }

  warn(text: string): void {
    this.note(this.paint('33', `warning: ${text}`));
  }

  error(text: string): void {
    this.note(this.paint('31', `error: ${text}`));
  }

  /** Text to be shown in a colour of ours (cleaned first, like any other line). */
  paint(style: string, text: string): Painted {
    return { style, text };
  }

  /** The one way a line reaches a stream: data cleaned of control characters, then our colour. */
  private render(line: Line): string {
    const text = typeof line === 'string' ? line : line.text;
    const shown = this.raw ? text : visible(text);
    if (typeof line === 'string' || !this.color) return shown;
    return `\u001b[${line.style}m${shown}\u001b[0m`;
  }

  /** The run's state and elapsed time: a spinner line on a terminal, one plain line per change otherwise. */
  showState(runId: string, state: string, startedAt: number): void {
    const line = () => this.render(`run ${runId}: ${state} (${formatDuration(Date.now() - startedAt)})`);
    if (!this.tty) return this.note(line());
    this.stopSpinner();
    let frame = 0;
    this.status = line();
    this.drawStatus();
    this.spinner = setInterval(() => {
      this.clearStatus();
      this.status = `${SPINNER[frame++ % SPINNER.length]} ${line()}`;
      this.drawStatus();
    }, 120);
    this.spinner.unref();
  }

  stopSpinner(): void {
    if (this.spinner) clearInterval(this.spinner);
    this.spinner = undefined;
    this.clearStatus();
    this.status = '';
  }

  /** Progress items as lines, for stderr while waiting (`live`) or stdout for `logs`. */
  renderItems(items: ProgressItem[], live: boolean): Line[] {
    const lines: Line[] = [];
    for (const item of items) {
      switch (item.type) {
        case 'text':
          lines.push(...prefixed(item.role === 'assistant' ? 'agent' : item.role, item.text));
          break;
        case 'command': {
          const exit = item.exitCode === undefined ? '' : ` → exit ${item.exitCode ?? '?'}`;
          lines.push(this.paint('36', `$ ${item.command}${exit}`));
          if (item.output) lines.push(...indent(item.output, live ? LIVE_OUTPUT_LINES : Infinity));
          break;
        }
        case 'output':
          lines.push(...indent(item.text, live ? LIVE_OUTPUT_LINES : Infinity));
          break;
        case 'file':
          lines.push(`file ${item.path} ${item.change}`);
          break;
        case 'state':
          // While waiting, the state line (spinner or one line per change) and the last line say it.
          if (live) break;
          lines.push(this.paint('2', `state ${item.state}${item.message ? `: ${item.message}` : ''}`));
          break;
        case 'event':
          lines.push(this.paint('2', `event ${item.text}`));
          break;
        default:
          // Every item type has its case (a new one does not compile until it is drawn here); a
          // transcript kind this code does not know arrives as an `event` item.
          item satisfies never;
      }
    }
    return lines;
  }

  private clearStatus(): void {
    if (this.tty && this.status) this.streams.stderr.write('\r\u001b[2K');
  }

  private drawStatus(): void {
    if (this.tty && this.status) this.streams.stderr.write(this.status);
  }
}

function prefixed(who: string, text: string): string[] {
  const lines = text.trimEnd().split('\n');
  return lines.map((line, i) => (i === 0 ? `${who}: ${line}` : `  ${line}`));
}

function indent(text: string, max: number): string[] {
  const lines = text.trimEnd().split('\n');
  const shown = lines.length > max ? [...lines.slice(0, max), `… ${lines.length - max} more lines`] : lines;
  return shown.map(line => `    ${line}`);
}

/** A plain text table (shared with the executor's command line). */
export { table } from '../common/table.js';
