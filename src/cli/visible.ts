// Data from a run or the service (agent text, command output, file names, status messages, run ids)
// is shown to a person, never obeyed by their terminal: C0 and C1 control characters other than
// newline and tab, and DEL, are written as visible escapes (`\x1b`), so an agent cannot set the
// clipboard (OSC 52), plant links (OSC 8), retitle the window or move the cursor and erase lines.
// Every line `agent-run` prints goes through here (Terminal); `--raw` turns it off.

/** Controls a terminal would act on: C0 except tab and newline, DEL, and C1. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

const hex = (char: string) => char.charCodeAt(0).toString(16).padStart(2, '0');

/** The text with every control character other than newline and tab shown as `\xNN`; CRLF becomes LF. */
export function visible(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(CONTROLS, char => `\\x${hex(char)}`);
}

/**
 * A value as JSON that a terminal cannot act on: JSON.stringify already escapes C0 controls, but it
 * leaves DEL and C1 (the single-byte CSI \u009b among them) raw; they become `\u00NN` escapes, so
 * the text stays valid JSON with the same value.
 */
export function visibleJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f]/g, char => `\\u00${hex(char)}`);
}
