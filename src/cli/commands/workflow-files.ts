// The runner's side of the files and workflow commands an action writes, for `agent-run action`:
// the `name<<DELIMITER` format of GITHUB_OUTPUT and GITHUB_STATE, `::command::` lines in the log
// (with ::add-mask:: honoured as the runner honours it), and the job summary's HTML as plain text.

import type { Terminal } from '../terminal.js';

/** Parses the `name<<DELIMITER … DELIMITER` (and the older `name=value`) lines of a command file. */
export function parseCommandFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^<=]+)<<(.+)$/.exec(lines[i]!);
    if (heredoc) {
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== heredoc[2]; i++) value.push(lines[i]!);
      values[heredoc[1]!] = value.join('\n');
      continue;
    }
    const simple = /^([^=]+)=(.*)$/.exec(lines[i]!);
    if (simple) values[simple[1]!] = simple[2]!;
  }
  return values;
}

const unescapeData = (text: string) => text.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');

/** The action's log as a person reads it: workflow commands rendered, masked values hidden. */
export class WorkflowLog {
  private readonly secrets: string[];
  private pending = '';
  private readonly sessions = new Set<string>();
  /** The token of a `::stop-commands::TOKEN` pause: until `::TOKEN::`, lines are data, not commands. */
  private stopToken: string | undefined;

  constructor(
    private readonly terminal: Terminal,
    secrets: string[]
  ) {
    this.secrets = secrets.filter(secret => secret.length > 0);
  }

  mask(text: string): string {
    let result = text;
    for (const secret of this.secrets) result = result.split(secret).join('***');
    return result;
  }

  write(chunk: string): void {
    this.pending += chunk;
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  /** Writes a last unterminated line; returns undefined so callers keep their own code. */
  flush(): undefined {
    if (this.pending !== '') this.line(this.pending);
    this.pending = '';
    return undefined;
  }

  private line(raw: string): void {
    if (this.stopToken !== undefined) {
      // Inside the pause, as on the runner: only the closing `::TOKEN::` line is acted on.
      if (raw === `::${this.stopToken}::`) this.stopToken = undefined;
      else this.terminal.note(this.mask(raw));
      return;
    }
    const command = /^::([\w-]+)(?: [^:]*)?::(.*)$/.exec(raw);
    if (!command) {
      const session = /^Session: (\S+)$/.exec(raw);
      if (session) this.sessions.add(session[1]!);
      return this.terminal.note(this.mask(raw));
    }
    const [, name, data] = command;
    // The failure annotation repeats the session link for GitHub's UI; here it was already shown.
    const text = this.mask(unescapeData(data!)).replace(/\nSession: (\S+)$/, (line, link: string) =>
      this.sessions.has(link) ? '' : line
    );
    switch (name) {
      case 'stop-commands':
        if (data!.length > 0) this.stopToken = data!;
        return;
      case 'add-mask':
        if (data!.length > 0) this.secrets.push(unescapeData(data!));
        return;
      case 'error':
        return this.terminal.note(this.terminal.paint('31', `Error: ${text}`));
      case 'warning':
        return this.terminal.note(this.terminal.paint('33', `Warning: ${text}`));
      case 'notice':
        return this.terminal.note(this.terminal.paint('36', `Notice: ${text}`));
      case 'group':
        return this.terminal.note(`▸ ${text}`);
      case 'endgroup':
      case 'debug':
      case 'save-state':
      case 'set-output':
        return;
      default:
        return this.terminal.note(text);
    }
  }
}

/** The summary's HTML and Markdown as plain lines for a terminal. */
export function renderSummary(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|h\d|tr|li|div|table|details|summary|pre)>/gi, '\n')
    .replace(/<h(\d)[^>]*>/gi, (_m, level: string) => `${'#'.repeat(Number(level))} `)
    .replace(/<li[^>]*>/gi, '- ')
    .replace(/<\/t[dh]>/gi, '\t')
    .replace(/<a [^>]*href="([^"]*)"[^>]*>(.*?)<\/a>/gi, (_m, href: string, text: string) =>
      text === href ? href : `${text} (${href})`
    )
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
