// Data from a run or the service (agent text, command output, file names, status messages, run ids)
// is shown to a person, never obeyed by their terminal: C0 and C1 control characters other than
// newline and tab, and DEL, are written as visible escapes (`\x1b`), so an agent cannot set the
// clipboard (OSC 52), plant links (OSC 8), retitle the window or move the cursor and erase lines.
// Bidirectional controls (U+202A–202E, U+2066–2069, U+200E, U+200F, U+061C) are shown the same way
// (`\u202e`): they reorder what follows, so a line can read differently from what it holds.
// Every line `agent-run` prints goes through here (Terminal); `--raw` turns it off.

/** Controls a terminal would act on: C0 except tab and newline, DEL, and C1. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/** Bidirectional embeddings, overrides, isolates and marks: text that reorders what a person reads. */
const BIDI = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g;

const hex = (char: string) => char.charCodeAt(0).toString(16).padStart(2, '0');

/**
 * The text with every control character other than newline and tab shown as `\xNN`, and every
 * bidirectional control as `\uNNNN`; CRLF becomes LF.
 */
export function visible(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .replace(CONTROLS, char => `\\x${hex(char)}`)
    .replace(BIDI, char => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A value as JSON that a terminal cannot act on: JSON.stringify already escapes C0 controls, but it
 * leaves DEL and C1 (the single-byte CSI \u009b among them) raw; they become `\u00NN` escapes, so
 * the text stays valid JSON with the same value.
 */
export function visibleJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g,
    char => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
  );
}
