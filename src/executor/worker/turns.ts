// The turns of a run's conversation, and the one place that decides what a follow-up does. A
// follow-up is a `followup` event in the run's transcript; then:
// - a queued run waits, and its first turn takes the prompt with every follow-up sent meanwhile;
// - a running run continues: after a turn that succeeds, its worker takes the follow-ups that
//   arrived during it as one more turn in the same workspace (followingTurn);
// - an ended run starts a new turn: the store queues it again, and the claim's first turn
//   (firstTurn) takes the follow-ups.
// The race between a follow-up and a turn's end (recorded after the worker's last look, before
// the finish) is guarded once, in the store: the follow-up's write and the finish each queue an
// ended run while a follow-up waits untaken (store/sql-store.ts requeueWaiting).
//
// Turns are read back from the transcript: each later turn takes the follow-ups no earlier turn
// took (a `turn` event names the seqs of those it took; a plain first turn, with no follow-up,
// records none, so a run never continued has the transcript it always had). A turn after the first
// continues in the same workspace and, where the harness can, the same CLI session (its last
// `agent_session` event). The conversation so far is also written out as text for agents that
// cannot resume a session (AGENT_CONVERSATION_FILE).

import type { RunRecordStore, StoredRun, TranscriptEvent, TranscriptStore } from '../store/types.js';

export type TurnMode = 'normal' | 'plan' | 'orchestrate';

export interface Turn {
  /** 1 for the first turn of the run, then 2, 3, … */
  number: number;
  /** What the agent is given: the prompt (first turn) or the follow-ups this turn takes. */
  prompt: string;
  mode: TurnMode;
  /** The seqs of the follow-up events this turn takes. */
  followups: number[];
  /** Whether an earlier turn ran: the workspace and HOME it left are continued. */
  continuing: boolean;
  /** The CLI session an earlier turn left, to resume. */
  resumeSession?: string;
  /** The conversation so far, as text (user messages and the agent's answers, in order). */
  conversation: string;
  /**
   * The earlier run whose conversation a new run continues (its create request's conversation_id):
   * the first turn starts from that run's final tree, HOME and CLI session.
   */
  startFrom?: string;
}

const modeOf = (value: unknown): TurnMode => (value === 'plan' || value === 'orchestrate' ? value : 'normal');

/**
 * The next turn of a run, from its create request's prompt and mode and its transcript; undefined
 * when an earlier turn ran and no follow-up is left to take (a running run with nothing new).
 * `done`: turns the caller knows ran besides those the transcript names (see turnsBefore).
 */
export function nextTurn(
  run: { prompt: string; extra: string },
  events: readonly TranscriptEvent[],
  done = 0
): Turn | undefined {
  const taken = new Set<number>();
  let last = done;
  let session: string | undefined;
  const pending: TranscriptEvent[] = [];
  const followups = new Map<number, string>();
  const lines: string[] = [`## user\n\n${run.prompt}`];
  for (const event of events) {
    if (event.kind === 'turn') {
      last = Math.max(last, Number(event.turn) || 0);
      const seqs = Array.isArray(event.followups) ? (event.followups as number[]) : [];
      for (const seq of seqs) taken.add(seq);
      if (Number(event.turn) > 1)
        lines.push(`## user\n\n${seqs.map(seq => followups.get(seq) ?? '').join('\n\n')}`);
    } else if (event.kind === 'followup') {
      followups.set(event.seq, String(event.message ?? ''));
      pending.push(event);
    } else if (event.kind === 'result' && typeof event.text === 'string') {
      lines.push(`## assistant\n\n${event.text}`);
    } else if (event.kind === 'agent_session' && typeof event.session_id === 'string') {
      session = event.session_id;
    }
  }
  const fresh = pending.filter(event => !taken.has(event.seq));
  if (last > 0 && fresh.length === 0) return undefined;
  const messages = fresh.map(event => String(event.message ?? ''));
  const createdMode = modeOf(parseExtra(run.extra).mode);
  const mode = fresh.length > 0 ? modeOf(fresh.at(-1)!.mode) : createdMode;
  const prompt = last === 0 ? [run.prompt, ...messages].join('\n\n') : messages.join('\n\n');
  if (last > 0) lines.push(`## user\n\n${prompt}`);
  const turn: Turn = {
    number: last + 1,
    prompt,
    mode,
    followups: fresh.map(event => event.seq),
    continuing: last > 0,
    conversation: `${lines.join('\n\n')}\n`
  };
  if (last > 0 && session !== undefined) turn.resumeSession = session;
  const from = parseExtra(run.extra).conversation_id;
  if (last === 0 && typeof from === 'string') turn.startFrom = from;
  return turn;
}

/** The first turn of a run that continues an earlier run's conversation: that run's session and words. */
export function continuedFrom(
  turn: Turn,
  earlier: { prompt: string; extra: string },
  events: readonly TranscriptEvent[]
): Turn {
  const before = nextTurn(
    earlier,
    [
      ...events,
      { seq: Number.MAX_SAFE_INTEGER, at: '', kind: 'followup', message: turn.prompt, mode: turn.mode }
    ],
    1
  );
  const session = events.findLast(event => event.kind === 'agent_session')?.session_id;
  const continued: Turn = { ...turn, conversation: before?.conversation ?? turn.conversation };
  if (typeof session === 'string') continued.resumeSession = session;
  return continued;
}

/**
 * Turns a run had before the claim that is running it now: each claim records an INPROGRESS state
 * event, so a run claimed before (then ended and followed up) had at least its first turn.
 */
export function turnsBefore(events: readonly TranscriptEvent[]): number {
  const claims = events.filter(event => event.kind === 'state' && event.state === 'INPROGRESS').length;
  return claims >= 2 ? 1 : 0;
}

/** Whether a turn is recorded: every one after the first, and a first that took follow-ups. */
export function recordsTurn(turn: Turn): boolean {
  return turn.number > 1 || turn.followups.length > 0;
}

/** The kinds that say which follow-ups are left to take (a cheap look: no output read). */
const FOLLOWUP_KINDS = ['followup', 'turn'] as const;

/** What the turns read of the stores: the run's transcript, and an earlier run a new one continues. */
export interface TurnStores {
  transcript: Pick<TranscriptStore, 'listEvents'>;
  runs: Pick<RunRecordStore, 'getRun'>;
}

/**
 * The first turn of a claim: the next one the transcript asks for (the prompt, or the follow-ups
 * that queued the run again), the first turn of a run continuing an earlier run's conversation
 * starting from that run's session and words.
 */
export async function firstTurn({ transcript, runs }: TurnStores, run: StoredRun): Promise<Turn> {
  const events = await transcript.listEvents(run.run_id);
  // A run claimed again with nothing new to take (its follow-up was taken by a turn that was then
  // cut short): it goes on with the prompt, in what the earlier turns left.
  let turn = nextTurn(run, events, turnsBefore(events)) ?? {
    ...nextTurn(run, [])!,
    number: 2,
    continuing: true
  };
  if (turn.startFrom && !turn.continuing) {
    const earlier = await runs.getRun(run.team, turn.startFrom);
    if (earlier) turn = continuedFrom(turn, earlier, await transcript.listEvents(earlier.run_id));
  }
  return turn;
}

/**
 * After `turn` succeeded: the turn that takes the follow-ups which arrived during it, or undefined
 * when none did (the run ends; one arriving from now on is the store's to take).
 */
export async function followingTurn(
  transcript: Pick<TranscriptStore, 'listEvents'>,
  run: StoredRun,
  turn: Turn
): Promise<Turn | undefined> {
  // A cheap look for follow-ups first; the whole transcript only when there is one to take.
  if (!nextTurn(run, await transcript.listEvents(run.run_id, { kinds: FOLLOWUP_KINDS }), turn.number))
    return undefined;
  return nextTurn(run, await transcript.listEvents(run.run_id), turn.number);
}

/**
 * Records that `turn` begins, naming the follow-ups it takes (only a turn recordsTurn says is
 * recorded; the caller writes what its transcript holds back first).
 */
export async function recordTurn(
  transcript: Pick<TranscriptStore, 'appendEvent'>,
  run: StoredRun,
  turn: Turn
): Promise<void> {
  await transcript.appendEvent(
    run.run_id,
    'turn',
    { turn: turn.number, mode: turn.mode, followups: turn.followups },
    new Date().toISOString()
  );
}

function parseExtra(extra: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(extra);
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
