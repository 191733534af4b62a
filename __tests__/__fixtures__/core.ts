// A typed stand-in for the part of @actions/core the action uses, recording everything it is told
// (outputs, saved state, log lines, failures, the job summary), for unit tests that mock the module
// with `jest.unstable_mockModule('@actions/core', () => core)`.

import type * as Core from '@actions/core';

type SummaryTable = Parameters<typeof Core.summary.addTable>[0];

export interface CoreRecord {
  inputs: Record<string, string>;
  state: Record<string, string>;
  outputs: Record<string, string>;
  secrets: string[];
  info: string[];
  notices: string[];
  warnings: string[];
  failures: string[];
  /** The last summary written: its heading and table rows as plain text. */
  summary?: { heading: string; rows: string[][] };
}

export interface FakeCore extends Pick<
  typeof Core,
  | 'getInput'
  | 'getState'
  | 'saveState'
  | 'setOutput'
  | 'setSecret'
  | 'setFailed'
  | 'info'
  | 'notice'
  | 'warning'
  | 'startGroup'
  | 'endGroup'
> {
  summary: {
    emptyBuffer(): FakeCore['summary'];
    addHeading(text: string, level?: number): FakeCore['summary'];
    addTable(rows: SummaryTable): FakeCore['summary'];
    write(options?: { overwrite?: boolean }): Promise<FakeCore['summary']>;
  };
  /** What the action did so far; `reset` starts over with these inputs and this saved state. */
  record: CoreRecord;
  reset(inputs?: Record<string, string>, state?: Record<string, string>): void;
}

const text = (message: string | Error) => (message instanceof Error ? message.message : message);

export function createFakeCore(): FakeCore {
  let pending: { heading: string; rows: string[][] } = { heading: '', rows: [] };
  const fresh = (inputs: Record<string, string> = {}, state: Record<string, string> = {}): CoreRecord => ({
    inputs: { ...inputs },
    state: { ...state },
    outputs: {},
    secrets: [],
    info: [],
    notices: [],
    warnings: [],
    failures: []
  });
  const core: FakeCore = {
    record: fresh(),
    reset(inputs, state) {
      core.record = fresh(inputs, state);
    },
    getInput: name => core.record.inputs[name] ?? '',
    getState: name => core.record.state[name] ?? '',
    saveState: (name, value) => void (core.record.state[name] = String(value)),
    setOutput: (name, value) => void (core.record.outputs[name] = String(value)),
    setSecret: secret => void core.record.secrets.push(secret),
    setFailed: message => void core.record.failures.push(text(message)),
    info: message => void core.record.info.push(message),
    notice: message => void core.record.notices.push(text(message)),
    warning: message => void core.record.warnings.push(text(message)),
    startGroup: name => void core.record.info.push(`::group::${name}`),
    endGroup: () => void core.record.info.push('::endgroup::'),
    summary: {
      emptyBuffer() {
        pending = { heading: '', rows: [] };
        return core.summary;
      },
      addHeading(heading) {
        pending.heading = heading;
        return core.summary;
      },
      addTable(rows) {
        pending.rows = rows.map(row => row.map(cell => (typeof cell === 'string' ? cell : cell.data)));
        return core.summary;
      },
      async write() {
        core.record.summary = pending;
        return core.summary;
      }
    }
  };
  return core;
}
