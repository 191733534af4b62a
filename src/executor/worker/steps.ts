// A turn of a run up to its agent's end: the workspace (made, or reopened for a follow-up), the
// run's HOME and output folder, the sandbox, the disk quota watch (one `du` every 2 s over what the
// run may write), the environment's setup commands (or the kept result of them), then the agent.
// It gathers what happened and never decides the run's outcome: execute.ts takes it from here
// (the diff, the outputs, publishing) and runs/outcomes.ts decides.

import { existsSync, lchownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { type AgentResult, agentKindOf } from '../agents/index.js';
import { type EnvironmentConfig, type ExecutorConfig, orchestrateProblem } from '../config/config.js';
import type {
  ArtifactStore,
  HoldStore,
  RunRecordStore,
  RunTokenStore,
  StoredRun,
  TranscriptStore
} from '../store/types.js';
import { type RunSandbox, confineRun } from '../sandbox/index.js';
import { imageRoot, prepareImage } from '../images/cache.js';
import { MAX_OPEN_FILES } from '../sandbox/cgroup.js';
import type { RunIdentity } from '../sandbox/run-files.js';
import type { Processes } from '../sandbox/spawn.js';
import { type RunUser, runUser } from '../sandbox/user.js';
import { removeTree } from '../workspace/remove.js';
import { makeRunTemp, releaseRunTemp } from './run-temp.js';
import {
  type TreeUsage,
  type Workspace,
  createWorkspace,
  reopenWorkspace,
  treeUsage
} from '../workspace/workspace.js';
import {
  type AgentOutcome,
  type StopReason,
  agentCouldNotRun,
  setupFailed,
  succeeded
} from '../runs/outcomes.js';
import { type RunOutputs, prepareOutputs } from './run-outputs.js';
import type { Turn } from './turns.js';
import { startFrom } from './start-from.js';
import { type OrchestrateTurn, startOrchestrateTurn } from './orchestrate.js';
import { isTerminalState } from '../../api/run.js';

/**
 * Appends an event to the run's transcript (the pool retries it while the store is away); `flush`
 * writes what a bounded transcript still holds back (worker/transcript-budget.ts).
 */
export type Recorder = ((kind: string, data: Record<string, unknown>) => Promise<void>) & {
  flush?: () => Promise<void>;
};

const QUOTA_CHECK_MS = 2000;

/**
 * What a run has written to disk: its workspace (only its own layer when the workspace is a
 * copy-on-write view of a shared checkout), its output folder (AGENT_RESULT_FILE's) and a harness's
 * HOME, all on the data dir's disk and all under the one quota; counted by `du` as the run's user
 * in the reader sandbox (workspace.ts treeUsage), in bytes and in entries.
 */
function runUsage(workspace: Workspace, outputs: RunOutputs, home?: string): Promise<TreeUsage> {
  return treeUsage(workspace.identity, [workspace.counted, outputs.dir, ...(home ? [home] : [])]);
}

/** Why a run's files are over what it may write, or undefined while they are within it. */
export function overQuota(
  usage: TreeUsage,
  limits: { quotaBytes: number; maxFiles: number }
): string | undefined {
  if (usage.bytes > limits.quotaBytes) return 'bytes';
  if (usage.files > limits.maxFiles)
    return `holds more than ${limits.maxFiles} files and directories (workspaces.max_files)`;
  if (usage.unreadable)
    return `holds files its own user cannot read, which the quota cannot count (${usage.unreadable})`;
  if (usage.uncounted) return `could not be counted: ${usage.uncounted}`;
  return undefined;
}

/** Aborts `controller` with 'quota' once the run's files are over its limits; returns the stopper. */
function watchQuota(
  measure: () => Promise<TreeUsage>,
  limits: { quotaBytes: number; maxFiles: number },
  controller: AbortController,
  note: QuotaNote,
  onError: (error: unknown) => void
): () => void {
  let measuring = false;
  const timer = setInterval(() => {
    if (measuring) return;
    measuring = true;
    measure()
      .then(usage => {
        const why = overQuota(usage, limits);
        if (why === undefined) return;
        if (why !== 'bytes') note.why = why;
        controller.abort('quota' satisfies StopReason);
      })
      .catch(onError)
      .finally(() => (measuring = false));
  }, QUOTA_CHECK_MS);
  return () => clearInterval(timer);
}

/** Why the quota stopped a run when it was not its bytes (its files' count, an unreadable part). */
export interface QuotaNote {
  why?: string;
}

/**
 * The environment's setup commands, in order, with the workspace writable whatever the turn's mode;
 * the first that exits non-zero fails the run.
 */
async function setup(
  environment: EnvironmentConfig,
  processes: Processes,
  env: Record<string, string>,
  signal: AbortSignal,
  record: Recorder,
  mode: Turn['mode']
): Promise<AgentOutcome> {
  for (const command of environment.setup) {
    if (signal.aborted) break;
    const result = await processes.shell(command, { env });
    await record('setup', {
      command,
      exit_code: result.exitCode,
      output: result.output,
      duration_ms: result.durationMs
    });
    if (result.exitCode !== 0) return setupFailed(command, result.exitCode, mode);
  }
  return succeeded();
}

/** The run's create config as an object (an unreadable one as empty). */
function runConfigOf(run: StoredRun): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(run.config);
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The variables the environment passes from the executor's environment, by name. */
function passedVariables(environment: EnvironmentConfig): Record<string, string> {
  return Object.fromEntries(
    environment.env.filter(name => process.env[name] !== undefined).map(name => [name, process.env[name]!])
  );
}

/**
 * The stores as executing one run sees them: its transcript, its artifacts, the hold on an earlier
 * run (and that run's record), an orchestrate turn's run token.
 */
export interface RunStepStores {
  runs: Pick<RunRecordStore, 'getRun'>;
  transcript: TranscriptStore;
  artifacts: ArtifactStore;
  holds: HoldStore;
  accounts: RunTokenStore;
}

/**
 * What of the executor's configuration a run reads (built once by the pool, for every run): where
 * its files go, the configuration file its sandbox hides, and the workspace bounds. What its agent
 * kind gets is the environment's `agent:` and the AgentContext steps.ts builds, never this.
 */
export type RunSettings = Pick<ExecutorConfig, 'dataDir' | 'configFile' | 'workspaces'>;

/** What executing a run needs: the run, where it runs, and the pool's means of reporting. */
export interface ExecuteOptions {
  run: StoredRun;
  environment: EnvironmentConfig;
  config: RunSettings;
  /** Aborted on cancel, lease lost and shutdown by the pool; on the time limit and quota from here. */
  controller: AbortController;
  record: Recorder;
  log: FastifyBaseLogger;
  stores: RunStepStores;
  /** The run's session link, for what publishing writes. */
  sessionLink?: (run: StoredRun) => string | undefined;
  /** Where this node's runs reach the executor's API (an orchestrate turn's proxy forwards there). */
  apiUrl?: () => string | undefined;
  /**
   * The run's secrets (an orchestrate turn's credential), added as they are made; the pool's
   * recorder replaces them in every event.
   */
  secrets?: Set<string>;
}

/** What the run's steps left behind for the steps after the agent. */
export interface Ran {
  ended: AgentOutcome;
  workspace?: Workspace;
  outputs?: RunOutputs;
  sandbox?: RunSandbox;
  measure?: () => Promise<TreeUsage>;
  /** Why the quota stopped the run, when it was not its bytes. */
  quota?: QuotaNote;
  /** The run's own HOME (harness kinds), removed once the run's outputs are kept. */
  home?: string;
  /** The run's request_usage as its harness measured it from the CLI's stream. */
  usage?: Record<string, unknown>;
  /** The mode of the turn that ran last. */
  mode?: Turn['mode'];
}

/**
 * What a turn holds that its end must let go whatever happened: the timer, the quota watch, a
 * harness's TMPDIR, the orchestrate credential, and what the steps made so far (`ran`: answered
 * with the outcome, also when a step throws).
 */
interface Held {
  ran: Partial<Ran>;
  stopWatch?: () => void;
  tmp?: string;
  orchestrate?: OrchestrateTurn;
}

/**
 * The run's workspace, sandbox, setup and agent, until the agent ends or the controller is
 * aborted; answers what the steps said (a step that throws fails the run as one that could not run).
 */
export async function runSteps(options: ExecuteOptions, turn: Turn): Promise<Ran> {
  const { run, environment, controller, log } = options;
  const timeout = setTimeout(() => controller.abort('timeout' satisfies StopReason), environment.timeoutMs);
  const held: Held = { ran: { home: homeOf(options) } };
  try {
    return await turnSteps(options, turn, held);
  } catch (error) {
    log.error({ err: error, run_id: run.run_id }, 'agent failed to run');
    // An error that knows its outcome says so (a source over the quota); any other could not run.
    const known = (error as { outcome?: AgentOutcome }).outcome;
    return { ...held.ran, ended: known ?? agentCouldNotRun((error as Error).message) };
  } finally {
    clearTimeout(timeout);
    await letGo(held, options);
  }
}

/** Ends what the turn held, once its agent ended (or a step threw). */
async function letGo(held: Held, { run, log }: ExecuteOptions): Promise<void> {
  held.stopWatch?.();
  if (held.tmp) releaseRunTemp(held.tmp);
  // The turn's agent ended: its credential goes now (the server also refuses it once the run ended).
  await held.orchestrate
    ?.revoke()
    .catch(error => log.warn({ err: error, run_id: run.run_id }, 'could not remove a run token'));
  // A build of a setup layer cut short by an error is never kept; the runs waiting on it go on.
  await held.ran.workspace?.setupLayer?.finish(false).catch(() => undefined);
}

/**
 * A harness (claude-code, …) keeps its CLI's settings and sessions in a HOME of the run's own,
 * shown as HOME in the sandbox; other kinds get an empty HOME per process (undefined here).
 */
function homeOf({ environment, config, run }: ExecuteOptions): string | undefined {
  return agentKindOf(environment.agent.kind)?.harnessType
    ? join(config.dataDir, 'homes', run.run_id)
    : undefined;
}

/** The turn's steps in order, each one's result kept in `held` as it comes. */
async function turnSteps(options: ExecuteOptions, turn: Turn, held: Held): Promise<Ran> {
  const { run, environment, config, controller, record } = options;
  const ran = held.ran;
  const home = ran.home;
  refusePlanWithoutSandbox(environment, turn);
  // A root executor's runs are an unprivileged host user, who owns what the run may write: its
  // directories are made empty and given to that user here (a shared checkout's files are theirs
  // from the start); nothing a run wrote is ever given away again on a later turn.
  const user = environment.sandbox.enabled ? runUser(environment.sandbox.user) : undefined;
  const identity: RunIdentity = { user, confined: environment.sandbox.enabled };
  if (home) prepareHome(home, turn, user);
  const workspace = await openWorkspace(options, turn, user, identity);
  ran.workspace = workspace;
  if (turn.startFrom && !turn.continuing) await startFromEarlier(options, turn.startFrom, workspace, home);
  // An orchestrate turn's credential, reachable only through the run's proxy (its gateway).
  if (turn.mode === 'orchestrate') held.orchestrate = await orchestrateCredential(options);
  const outputs = prepareOutputs(config.dataDir, run.run_id, identity);
  ran.outputs = outputs;
  // An unconfined harness CLI's TMPDIR: short, as a socket's path inside it must be (a longer one
  // sends Claude Code back to the machine's /tmp).
  if (home && !environment.sandbox.enabled) held.tmp = makeRunTemp(config.dataDir);
  const conversationFile = writeConversation(outputs, turn, user);
  const confined = await confine(options, { workspace, outputs, user, home }, held.orchestrate);
  ran.sandbox = confined.sandbox;
  for (const message of confined.warnings) await record('warning', { message });
  const measure = measureOf(workspace, outputs, home, confined.sandbox);
  ran.measure = measure;
  ran.quota = {};
  held.stopWatch = watchRunQuota(options, measure, ran.quota);
  const env = passedVariables(environment);
  const setupEnded = await setupOfTurn(options, turn, workspace, confined.processes, env);
  if (setupEnded.state !== 'SUCCEEDED' || controller.signal.aborted) return { ...ran, ended: setupEnded };
  // A plan turn's agent reads the workspace and changes nothing: from here on every process of the
  // run sees it read-only. The setup before it wrote as in any run (its writes are the environment).
  if (turn.mode === 'plan') confined.sandbox?.protectWorkspace();
  const agentEnv = {
    ...env,
    ...outputs.env,
    AGENT_CONVERSATION_FILE: conversationFile,
    ...held.orchestrate?.env
  };
  const ended = await runAgent(options, turn, { workspace, env: agentEnv, home, tmp: held.tmp, confined });
  return { ...ran, ended, usage: ended.request_usage };
}

/** Plan mode is enforced by the sandbox's read-only workspace: without a sandbox it is refused. */
function refusePlanWithoutSandbox(environment: EnvironmentConfig, turn: Turn): void {
  if (turn.mode === 'plan' && !environment.sandbox.enabled)
    throw new Error(
      `mode plan: environment ${environment.id} has sandbox: off, so its workspace cannot be made read-only; use mode normal or an environment with a sandbox`
    );
}

/** The run's HOME, made empty (and the run user's) unless a later turn continues in it. */
function prepareHome(home: string, turn: Turn, user: RunUser | undefined): void {
  if (turn.continuing && existsSync(home)) return;
  removeTree(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  if (user) lchownSync(home, user.uid, user.gid);
}

/**
 * The turn's workspace: a later turn (a follow-up) continues in what the earlier turns left, or is
 * refused when that is gone; a first turn makes it from the environment's source.
 */
async function openWorkspace(
  { run, environment, config }: ExecuteOptions,
  turn: Turn,
  user: RunUser | undefined,
  identity: RunIdentity
): Promise<Workspace> {
  const reopened = turn.continuing ? reopenWorkspace(config.dataDir, run.run_id, identity) : undefined;
  if (turn.continuing && !reopened)
    throw new Error(
      `the workspace of run ${run.run_id} is gone (removed after workspaces.continue_for); it cannot be continued`
    );
  return (
    reopened ??
    (await createWorkspace(
      environment,
      config.dataDir,
      run.run_id,
      config.workspaces.quotaBytes,
      user,
      cachesSetup(environment, turn)
    ))
  );
}

/** A conversation_id start: the earlier run held while its files are copied into this run's. */
async function startFromEarlier(
  { run, config, controller, stores }: ExecuteOptions,
  earlierId: string,
  workspace: Workspace,
  home: string | undefined
): Promise<void> {
  const release = await holdEarlier(stores, run, earlierId, controller.signal);
  await startFrom({
    dataDir: config.dataDir,
    runId: run.run_id,
    earlierId,
    workspace,
    home,
    limits: { quotaBytes: config.workspaces.quotaBytes, maxFiles: config.workspaces.maxFiles },
    release
  });
}

/** The orchestrate turn's credential (its run token), once the environment allows the mode. */
async function orchestrateCredential(options: ExecuteOptions): Promise<OrchestrateTurn> {
  const problem = orchestrateProblem(options.environment);
  if (problem) throw new Error(problem);
  return startOrchestrateTurn(
    options.stores.accounts,
    options.run,
    options.apiUrl?.(),
    options.secrets ?? new Set()
  );
}

/** The conversation so far, as the file the agent reads (AGENT_CONVERSATION_FILE); answers its path. */
function writeConversation(outputs: RunOutputs, turn: Turn, user: RunUser | undefined): string {
  const conversationFile = join(outputs.dir, 'conversation.md');
  writeFileSync(conversationFile, turn.conversation, { mode: 0o644, flag: 'wx' });
  if (user) lchownSync(conversationFile, user.uid, user.gid);
  return conversationFile;
}

/** The run's sandbox and the spawner of its processes, with the warnings the run records. */
type Confined = Awaited<ReturnType<typeof confineRun>>;

/** What the run's sandbox is made around: its files and its user. */
interface RunPlaces {
  workspace: Workspace;
  outputs: RunOutputs;
  user: RunUser | undefined;
  home: string | undefined;
}

/** The run's sandbox (in its image's root when it has one), around its workspace, outputs and HOME. */
async function confine(
  { run, environment, config, controller }: ExecuteOptions,
  { workspace, outputs, user, home }: RunPlaces,
  orchestrate: OrchestrateTurn | undefined
): Promise<Confined> {
  // An image's root: from the cache (copied first with image_pull: always), held until the sandbox closes.
  const image = environment.image
    ? imageRoot(
        await prepareImage(config.dataDir, environment.image, config.workspaces.cacheBytes),
        environment.env
      )
    : undefined;
  return confineRun(
    {
      runId: run.run_id,
      image,
      sandbox: environment.sandbox,
      dataDir: config.dataDir,
      configFile: config.configFile,
      workspace: workspace.root,
      read: workspace.borrowed,
      write: [outputs.dir],
      user,
      home,
      gateway: orchestrate?.gateway
    },
    { signal: controller.signal, cwd: workspace.path }
  );
}

/** The measure of what the run wrote, with what its processes hold open of files deleted since. */
function measureOf(
  workspace: Workspace,
  outputs: RunOutputs,
  home: string | undefined,
  sandbox: RunSandbox | undefined
): () => Promise<TreeUsage> {
  return async () => {
    const usage = await runUsage(workspace, outputs, home);
    const hidden = sandbox?.deletedOpenBytes() ?? 0;
    if (hidden === undefined)
      return { ...usage, uncounted: `its processes hold more than ${MAX_OPEN_FILES} files open` };
    return { ...usage, bytes: usage.bytes + hidden };
  };
}

/** Watches the run's files against the workspace bounds; answers the stopper. */
function watchRunQuota(
  { run, config, controller, log }: ExecuteOptions,
  measure: () => Promise<TreeUsage>,
  note: QuotaNote
): () => void {
  const limits = { quotaBytes: config.workspaces.quotaBytes, maxFiles: config.workspaces.maxFiles };
  return watchQuota(measure, limits, controller, note, error =>
    log.warn({ err: error, run_id: run.run_id }, 'could not measure a workspace')
  );
}

/**
 * The environment's setup ran in the first turn; its effects are in the workspace already. With
 * setup_cache, a kept result of the same commands for the same commit stands for them.
 */
async function setupOfTurn(
  { environment, controller, record }: ExecuteOptions,
  turn: Turn,
  workspace: Workspace,
  processes: Processes,
  env: Record<string, string>
): Promise<AgentOutcome> {
  const layer = turn.continuing ? undefined : workspace.setupLayer;
  if (layer?.cached)
    await record('notice', {
      text: 'setup commands skipped: their result for this commit is kept (setup_cache)'
    });
  const setupEnded =
    turn.continuing || layer?.cached
      ? succeeded()
      : await setup(environment, processes, env, controller.signal, record, turn.mode);
  if (layer && !layer.cached)
    await layer.finish(setupEnded.state === 'SUCCEEDED' && !controller.signal.aborted);
  return setupEnded;
}

/** What the agent runs in: its workspace, variables, HOME and TMPDIR, and the sandbox's processes. */
interface AgentPlace {
  workspace: Workspace;
  env: Record<string, string>;
  home: string | undefined;
  tmp: string | undefined;
  confined: Confined;
}

/** The environment's agent, on the turn's prompt, until it ends or the controller is aborted. */
async function runAgent(
  { run, environment, controller, record }: ExecuteOptions,
  turn: Turn,
  { workspace, env, home, tmp, confined }: AgentPlace
): Promise<AgentResult> {
  const agent = agentKindOf(environment.agent.kind);
  if (!agent) throw new Error(`agent kind ${environment.agent.kind} is not available in this executor`);
  return agent.run({
    runId: run.run_id,
    environmentId: run.environment_id,
    prompt: turn.prompt,
    workspace: workspace.path,
    agent: environment.agent,
    env,
    ...(environment.image ? { image: environment.image.ref } : {}),
    resumeSession: turn.resumeSession,
    turn: turn.number,
    mode: turn.mode,
    signal: controller.signal,
    record,
    runConfig: runConfigOf(run),
    home,
    tmp,
    processes: confined.processes
  });
}

/** How long a hold on an earlier run lasts unless renewed (it lapses if this node dies). */
const HOLD_LEASE_MS = 60_000;
/** How often a hold is renewed, and a hold of another new run on the same earlier run retried. */
const HOLD_RENEW_MS = 20_000;
const HOLD_RETRY_MS = 250;

/**
 * Holds the earlier run of a conversation_id start in the store while its files are read: a
 * follow-up of it stays queued, on every node, until the release. Undefined when the earlier run is
 * not (or no longer) ended; while another new run holds it (continuing the same conversation), this
 * waits for that hold to end.
 */
async function holdEarlier(
  { holds, runs }: RunStepStores,
  run: StoredRun,
  earlierId: string,
  signal: AbortSignal
): Promise<(() => Promise<void>) | undefined> {
  for (;;) {
    if (await holds.holdRun(run.team, earlierId, run.run_id, HOLD_LEASE_MS)) break;
    const earlier = await runs.getRun(run.team, earlierId);
    if (!earlier || !isTerminalState(earlier.state) || signal.aborted) return undefined;
    await new Promise(resolve => setTimeout(resolve, HOLD_RETRY_MS));
  }
  const renew = setInterval(
    () => void holds.holdRun(run.team, earlierId, run.run_id, HOLD_LEASE_MS).catch(() => undefined),
    HOLD_RENEW_MS
  );
  renew.unref();
  return async () => {
    clearInterval(renew);
    await holds.releaseRun(earlierId, run.run_id).catch(() => undefined);
  };
}

/**
 * Whether a run may use or make a kept setup layer: the environment asks for it, has setup
 * commands and a sandbox, and the run does not start from another run's changes (the commands
 * then run over those changes, a result of its own).
 */
function cachesSetup(environment: EnvironmentConfig, turn: Turn): boolean {
  return (
    environment.setupCache && environment.setup.length > 0 && environment.sandbox.enabled && !turn.startFrom
  );
}
