// Every kind of transcript event is shown in words by both kinds of reader: the executor's run
// renderer (session page and dashboard) and the client's progress items (CLI terminal, action log).
// The samples are typed by the union, so a kind added to src/api/events.ts needs a sample here too.
// No kind is shown as raw JSON or as its bare name, and a kind from a newer writer is still shown.
import { describe, expect, it } from '@jest/globals';
import { EVENT_KINDS, type EventFields, type EventKind } from '../../src/api/events.js';
import { itemsFromTranscript } from '../../src/client/index.js';
import { eventHtml } from '../../src/executor/server/run-view.js';

const SAMPLES: { [K in EventKind]: EventFields[K] } = {
  state: { state: 'FAILED', status_message: 'lint failed', error_code: 'agent_failed' },
  message: { text: 'looking at the tests' },
  output: { stream: 'stdout', text: 'ok 1 - parses' },
  command: { command: 'npm test', exit_code: 1, output: 'one failure', duration_ms: 812 },
  setup: { command: 'npm ci', exit_code: 0, output: 'added 12 packages', duration_ms: 4000 },
  file: { path: 'src/a.ts', change: 'modified', bytes: 120 },
  diff: {
    diff: '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n',
    truncated: false,
    files: [{ path: 'x', change: 'modified' }]
  },
  exit: { exit_code: 0, signal: null },
  result: { text: 'All green now.', source: 'result_file' },
  notice: { text: 'AGENT_USAGE_FILE ignored: not JSON' },
  warning: { message: 'no network namespace: the run may reach the network' },
  truncated: {
    dropped_bytes: 900,
    dropped_events: 3,
    dropped_lines: 40,
    limit_bytes: 1000,
    text: '… 900 bytes dropped'
  },
  omitted: { omitted_events: 5, omitted_bytes: 5000, text: '… 5 more events are not shown here' },
  artifact: { artifact_uid: 'a1b2c3d4-uid', filename: 'changes.patch', mime_type: 'text/x-diff', size: 157 },
  publish: {
    commit: '0123456789abcdef0123',
    branch: 'agent/fix-lint',
    remote: 'https://github.com/o/r.git',
    base_commit: 'fedcba98',
    pull_request_url: 'https://github.com/o/r/pull/7',
    pull_request_number: 7
  },
  action: { id: 'toolu_1', name: 'Bash', input: '{"command":"npm test"}' },
  action_result: { id: 'toolu_1', ok: true, output: 'ok 1 - parses' },
  agent_session: { harness: 'claude-code', session_id: 'sess-42' },
  followup: { message: 'now also fix the tests', mode: 'normal' },
  turn: { turn: 2, mode: 'normal', followups: [12] }
};

const eventOf = (kind: EventKind, seq = 1) => ({
  seq,
  at: '2026-11-24T10:00:00.000Z',
  kind,
  ...SAMPLES[kind]
});
/** The text a person sees of some HTML (tags dropped, entities read). */
const visible = (html: string) =>
  html.replace(/<[^>]*>/g, '').replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));

describe.each([...EVENT_KINDS])('a %s event', kind => {
  it('is shown in words on the run pages, with no field meant for programs', () => {
    const text = visible(eventHtml(eventOf(kind)));
    expect(text.replace(/^\S+\s+/, '').trim()).not.toBe('');
    for (const internal of ['{"', '"seq"', 'artifact_uid', 'a1b2c3d4-uid', 'result_file', 'duration_ms'])
      expect([internal, text.includes(internal)]).toEqual([internal, false]);
  });

  it('is a progress item that says more than its kind', () => {
    const items = itemsFromTranscript([eventOf(kind)]);
    expect(items.length).toBeGreaterThan(0);
    for (const item of items)
      expect(JSON.stringify(item)).not.toBe(JSON.stringify({ type: 'event', text: kind }));
  });
});

describe('a kind from a newer writer', () => {
  const newer = {
    seq: 9,
    at: '2026-11-24T10:00:00.000Z',
    kind: 'tool_call',
    text: 'read <b>file</b>',
    id: 'x'
  };

  it('is shown on the run pages by its name and its text, escaped', () => {
    const html = eventHtml(newer);
    expect(visible(html)).toContain('tool_call');
    expect(visible(html)).toContain('read <b>file</b>');
    expect(html).not.toContain('<b>');
  });

  it('is a progress item with its text', () => {
    expect(itemsFromTranscript([newer])).toEqual([{ type: 'event', text: 'read <b>file</b>' }]);
  });
});
