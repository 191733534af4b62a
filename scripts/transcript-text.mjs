// The demo's plain-text transcript: every event in full (messages, commands with exit code and
// output, the diff), each cut at a fixed number of lines with a marker saying how many were left out.

export const MAX_LINES = 40;

/** At most `max` lines of `text`, then "… N more lines" when some were left out. */
export function bounded(text, max = MAX_LINES) {
  const lines = String(text).replace(/\n$/, '').split('\n');
  if (lines.length <= max) return lines;
  return [...lines.slice(0, max), `… ${lines.length - max} more lines`];
}

/** The heading line and the body lines of one transcript event. */
export function describeEvent(event) {
  switch (event.kind) {
    case 'state':
      return {
        head: event.status_message ? `${event.state}: ${event.status_message}` : event.state,
        body: ''
      };
    case 'message':
      return { head: '', body: event.text ?? '' };
    case 'command':
    case 'setup':
      return { head: `$ ${event.command} → exit ${event.exit_code}`, body: event.output ?? '' };
    case 'file':
      return { head: `${event.path} ${event.change ?? ''}`.trim(), body: event.diff ?? '' };
    case 'diff': {
      const files = (event.files ?? []).map(file => `${file.path} (${file.change})`).join(', ');
      return { head: files ? `files changed: ${files}` : 'changes', body: event.diff ?? '' };
    }
    case 'exit':
      return {
        head: `agent exited with code ${event.exit_code}${event.signal ? ` (${event.signal})` : ''}`,
        body: ''
      };
    case 'output':
      return { head: event.stream ?? '', body: event.text ?? '' };
    case 'result':
      return { head: '', body: event.text ?? '' };
    case 'artifact':
      return {
        head: `${event.filename ?? event.title ?? event.url ?? ''} (${event.artifact_uid ?? '?'})`.trim(),
        body: ''
      };
    default: {
      const { seq: _seq, at: _at, kind: _kind, ...rest } = event;
      return { head: '', body: JSON.stringify(rest) };
    }
  }
}

/** Lines to print for a transcript's events, indented, each event bounded to `max` lines. */
export function transcriptLines(events, max = MAX_LINES) {
  const out = [];
  const messages = new Set();
  const filesShown = new Set();
  for (let event of events) {
    // Each fact once: the final answer that repeats a message, and the files a file event
    // already named, are not printed again (the diff itself still is).
    if (event.kind === 'message') messages.add(String(event.text ?? '').trim());
    if (event.kind === 'result' && messages.has(String(event.text ?? '').trim())) continue;
    if (event.kind === 'file' && !event.diff) filesShown.add(`${event.path} (${event.change})`);
    if (event.kind === 'diff' && Array.isArray(event.files)) {
      const files = event.files.filter(file => !filesShown.has(`${file.path} (${file.change})`));
      if (files.length === 0 && !event.diff) continue;
      event = { ...event, files };
    }
    const { head, body } = describeEvent(event);
    out.push(`  ${String(event.at).slice(11, 23)}  ${event.kind.padEnd(8)} ${head}`.trimEnd());
    if (body !== '') for (const line of bounded(body, max)) out.push(`      ${line}`.trimEnd());
  }
  return out;
}
