export const id = 492;
export const ids = [492];
export const modules = {

/***/ 78492:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  main: () => (/* binding */ main)
});

// UNUSED EXPORTS: USAGE

// EXTERNAL MODULE: external "node:fs"
var external_node_fs_ = __webpack_require__(73024);
// EXTERNAL MODULE: external "node:path"
var external_node_path_ = __webpack_require__(76760);
// EXTERNAL MODULE: external "node:util"
var external_node_util_ = __webpack_require__(57975);
// EXTERNAL MODULE: ./node_modules/yaml/dist/index.js
var dist = __webpack_require__(38815);
;// CONCATENATED MODULE: ./src/api/run.ts
// The run contract: the one source of truth for what travels over the wire.
// Plain types and constants only, so the action's bundle carries no schema library;
// the executor's JSON schemas in ./schemas.ts are checked against these types by the compiler.
/** Path prefix of every endpoint; part of the contract (spec section 9). */
const API_PREFIX = '/api/v1';
/** States the contract names. Servers may send others; clients must treat those as not terminal. */
const KNOWN_STATES = [
    'QUEUED',
    'PENDING',
    'CLAIMED',
    'INPROGRESS',
    'BLOCKED',
    'SUCCEEDED',
    'FAILED',
    'ERROR',
    'CANCELLED'
];
/** States after which a run never changes again. */
const TERMINAL_STATES = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];
function isTerminalState(state) {
    return TERMINAL_STATES.includes(state);
}
function isKnownState(state) {
    return KNOWN_STATES.includes(state);
}

;// CONCATENATED MODULE: ./src/api/error-codes.ts
// The error reference (spec section 7.2): every `error_code` a server of this contract sends,
// with its HTTP status (for request errors) and what it means. The executor serves this list at
// GET /api/v1/errors and the README prints it.
const ERROR_CODES = {
    invalid_request: {
        status: 400,
        retryable: false,
        meaning: 'The request is malformed: the body is not JSON, or a query parameter or header has a bad value.'
    },
    unauthenticated: {
        status: 401,
        retryable: false,
        meaning: 'The Authorization header is missing, is not `Bearer <key>`, or names a key that is unknown or revoked.'
    },
    not_found: {
        status: 404,
        retryable: false,
        meaning: 'No run with this id is visible to the key (it does not exist or belongs to another team).'
    },
    environment_not_found: {
        status: 404,
        retryable: false,
        meaning: 'config.environment_id names no environment that this server serves.'
    },
    route_not_found: { status: 404, retryable: false, meaning: 'No endpoint has this method and path.' },
    run_already_finished: {
        status: 409,
        retryable: false,
        meaning: 'The run is already in a terminal state, so it cannot be cancelled.'
    },
    idempotency_in_progress: {
        status: 409,
        retryable: true,
        meaning: 'Another request with the same Idempotency-Key is being processed; retry shortly.'
    },
    payload_too_large: { status: 413, retryable: false, meaning: 'The request body is larger than the limit.' },
    unsupported_media_type: {
        status: 415,
        retryable: false,
        meaning: 'The request body is not `application/json`.'
    },
    invalid_field: {
        status: 422,
        retryable: false,
        meaning: 'A field of the body is missing or has the wrong type or value; `detail` names it.'
    },
    prompt_too_large: { status: 422, retryable: false, meaning: 'The prompt is longer than the limit.' },
    idempotency_key_reused: {
        status: 422,
        retryable: false,
        meaning: 'The Idempotency-Key was already used with a different request body.'
    },
    rate_limited: {
        status: 429,
        retryable: true,
        meaning: 'This key sent more requests than its rate limit allows; wait for Retry-After.'
    },
    resource_unavailable: {
        status: 429,
        retryable: true,
        meaning: 'The run queue is full; wait for Retry-After and create the run again.'
    },
    internal_error: { status: 500, retryable: true, meaning: 'The server failed unexpectedly.' },
    store_unavailable: {
        status: 503,
        retryable: true,
        meaning: 'The executor cannot reach its store (PostgreSQL restarting, say); nothing was changed. Retry after Retry-After.'
    },
    shutting_down: {
        status: 503,
        retryable: true,
        meaning: 'The server is stopping and accepts no new work; retry against a running server.'
    },
    agent_failed: {
        status: null,
        retryable: false,
        meaning: 'The agent finished unsuccessfully (it exited non-zero or reported a failure).'
    },
    command_failed: {
        status: null,
        retryable: false,
        meaning: 'A command the agent ran exited non-zero; the status message names it and its exit code.'
    },
    setup_failed: {
        status: null,
        retryable: false,
        meaning: "One of the environment's setup commands failed before the agent started."
    },
    timeout: { status: null, retryable: true, meaning: "The run exceeded its environment's time limit." },
    cancelled: { status: null, retryable: false, meaning: 'The run was cancelled by a client.' },
    executor_restarted: {
        status: null,
        retryable: true,
        meaning: 'The executor stopped while the run was in progress; the run is not re-run automatically because agents have side effects.'
    },
    workspace_quota_exceeded: {
        status: null,
        retryable: false,
        meaning: "The run's workspace grew past the executor's disk quota (workspaces.quota)."
    }
};

;// CONCATENATED MODULE: ./src/api/duration.ts
// Durations as people write them in workflows: `90s`, `45m`, `1h30m`, `2h`.
const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000 };
/** Parses `1h30m`-style durations into milliseconds; returns undefined when the text is not one. */
function parseDuration(text) {
    const value = text.trim().toLowerCase();
    if (!/^(\d+h)?(\d+m)?(\d+s)?$/.test(value) || value === '')
        return undefined;
    let total = 0;
    for (const [, amount, unit] of value.matchAll(/(\d+)([hms])/g)) {
        total += Number(amount) * UNIT_MS[unit];
    }
    return total;
}
/** `3725000` → `1h2m5s`; `65000` → `1m5s`; `900` → `0s`. */
function formatDuration(ms) {
    let seconds = Math.max(0, Math.round(ms / 1000));
    const hours = Math.floor(seconds / 3600);
    seconds -= hours * 3600;
    const minutes = Math.floor(seconds / 60);
    seconds -= minutes * 60;
    let text = '';
    if (hours)
        text += `${hours}h`;
    if (minutes)
        text += `${minutes}m`;
    if (seconds || text === '')
        text += `${seconds}s`;
    return text;
}

;// CONCATENATED MODULE: ./src/api/index.ts




// EXTERNAL MODULE: external "node:url"
var external_node_url_ = __webpack_require__(73136);
;// CONCATENATED MODULE: ./src/executor/store/spec.ts
// Which store a node uses: a path or sqlite: URL for SQLite (the default, in the data dir), a
// postgres:// URL for PostgreSQL shared by several nodes. Parsing only: opening is open.ts, so the
// config can name a store without loading a database driver.


class StoreSpecError extends Error {
}
/**
 * Reads a store setting. Undefined means SQLite in the data dir; relative paths are from `base`.
 * Throws StoreSpecError naming the value (password hidden) and the expected forms.
 */
function parseStoreSpec(value, dataDir, base) {
    const text = value?.trim() ?? '';
    if (text === '')
        return { kind: 'sqlite', path: (0,external_node_path_.join)(dataDir, 'executor.db') };
    if (/^postgres(ql)?:\/\//i.test(text)) {
        try {
            const url = new URL(text);
            if (url.hostname === '' && !url.searchParams.has('host'))
                throw new Error('no host');
        }
        catch {
            throw new StoreSpecError(`${JSON.stringify(redactUrl(text))}: not a valid PostgreSQL URL; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`);
        }
        return { kind: 'postgres', url: text };
    }
    if (/^sqlite:/i.test(text)) {
        const rest = text.slice('sqlite:'.length);
        const path = rest.startsWith('//') ? (0,external_node_url_.fileURLToPath)(`file:${rest}`) : rest;
        if (path === '')
            throw new StoreSpecError(`${JSON.stringify(text)}: expected sqlite:PATH, e.g. sqlite:/var/lib/agent-executor/executor.db`);
        return { kind: 'sqlite', path: (0,external_node_path_.isAbsolute)(path) ? path : (0,external_node_path_.resolve)(base, path) };
    }
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
        throw new StoreSpecError(`${JSON.stringify(redactUrl(text))}: unsupported store; expected a path or sqlite:PATH for SQLite, or postgres://USER:PASSWORD@HOST:PORT/DATABASE`);
    }
    return { kind: 'sqlite', path: (0,external_node_path_.resolve)(base, text) };
}
/** The store named by the spec, with password hidden, for logs. */
function describeStore(spec) {
    return spec.kind === 'sqlite' ? `sqlite:${spec.path}` : redactUrl(spec.url);
}
/** postgres://user:***@host:port/db: the address with any password taken out, for logs and errors. */
function redactUrl(url) {
    try {
        const parsed = new URL(url);
        if (parsed.password)
            parsed.password = '***';
        for (const name of [...parsed.searchParams.keys()])
            if (/pass|secret|key/i.test(name))
                parsed.searchParams.set(name, '***');
        return parsed.href;
    }
    catch {
        // Not a URL the parser takes: hide everything between :// and the last @ (a password may hold
        // / and @ of its own).
        return url.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, '$1***@');
    }
}

;// CONCATENATED MODULE: ./src/executor/config.ts
// The executor's configuration: agent-executor.yaml, checked at start-up with errors that name the
// key, the value and the expected form. Without a file, one environment `local` serves the current
// directory with the simulated agent.





class ConfigError extends Error {
}
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Loads the config file (explicit, or agent-executor.yaml when present) and applies CLI overrides. */
function loadConfig(overrides = {}, cwd = process.cwd(), env = process.env) {
    const explicit = overrides.config !== undefined;
    const file = (0,external_node_path_.resolve)(cwd, overrides.config ?? 'agent-executor.yaml');
    let raw = {};
    let base = cwd;
    if ((0,external_node_fs_.existsSync)(file)) {
        let text;
        try {
            text = (0,external_node_fs_.readFileSync)(file, 'utf8');
        }
        catch (error) {
            throw new ConfigError(`config ${file}: cannot read it (${error.code})`);
        }
        try {
            raw = (0,dist/* parse */.qg)(text) ?? {};
        }
        catch (error) {
            throw new ConfigError(`config ${file}: not valid YAML (${error.message.split('\n')[0]})`);
        }
        base = (0,external_node_path_.dirname)(file);
    }
    else if (explicit) {
        throw new ConfigError(`config ${file}: no such file`);
    }
    const config = parseConfig(raw, base, explicit || (0,external_node_fs_.existsSync)(file) ? file : 'defaults');
    if (overrides.host !== undefined)
        config.host = overrides.host;
    if (overrides.port !== undefined)
        config.port = overrides.port;
    if (overrides.dataDir !== undefined) {
        const inDataDir = config.store.kind === 'sqlite' && config.store.path === (0,external_node_path_.join)(config.dataDir, 'executor.db');
        config.dataDir = (0,external_node_path_.resolve)(cwd, overrides.dataDir);
        if (inDataDir)
            config.store = parseStoreSpec(undefined, config.dataDir, cwd);
    }
    const [store, from] = overrides.store !== undefined
        ? [overrides.store, '--store']
        : env.AGENT_EXECUTOR_STORE
            ? [env.AGENT_EXECUTOR_STORE, 'AGENT_EXECUTOR_STORE']
            : [undefined, ''];
    if (store !== undefined) {
        try {
            config.store = parseStoreSpec(store, config.dataDir, cwd);
        }
        catch (error) {
            if (error instanceof StoreSpecError)
                throw new ConfigError(`${from} ${error.message}`);
            throw error;
        }
    }
    return config;
}
function parseConfig(raw, base, where = 'config') {
    const problems = [];
    const r = new Reader(problems);
    const root = r.object(raw, '');
    r.known(root, '', [
        'server',
        'data_dir',
        'store',
        'workers',
        'lease',
        'shutdown_grace',
        'log_level',
        'workspaces',
        'limits',
        'environments'
    ]);
    const server = r.object(root.server, 'server');
    const workspaces = r.object(root.workspaces, 'workspaces');
    r.known(workspaces, 'workspaces', ['retention', 'quota']);
    r.known(server, 'server', ['host', 'port', 'public_url']);
    const limits = r.object(root.limits, 'limits');
    r.known(limits, 'limits', [
        'max_body_bytes',
        'max_prompt_bytes',
        'rate_limit_per_minute',
        'max_queued_runs',
        'retention_days'
    ]);
    const workers = r.int(root.workers, 'workers', 4, 1, 256);
    const dataDir = (0,external_node_path_.resolve)(base, r.string(root.data_dir, 'data_dir', '.agent-executor'));
    let store = parseStoreSpec(undefined, dataDir, base);
    if (root.store !== undefined && root.store !== null) {
        try {
            if (typeof root.store !== 'string')
                throw new StoreSpecError(`${show(root.store)}: expected a string`);
            store = parseStoreSpec(root.store, dataDir, base);
        }
        catch (error) {
            if (!(error instanceof StoreSpecError))
                throw error;
            problems.push(`store ${error.message}`);
        }
    }
    const config = {
        host: r.string(server.host, 'server.host', '127.0.0.1'),
        port: r.int(server.port, 'server.port', 8080, 0, 65535),
        publicUrl: r.url(server.public_url, 'server.public_url'),
        dataDir,
        store,
        workers,
        leaseMs: r.duration(root.lease, 'lease', 30_000),
        shutdownGraceMs: r.duration(root.shutdown_grace, 'shutdown_grace', 30_000),
        logLevel: r.oneOf(root.log_level, 'log_level', ['fatal', 'error', 'warn', 'info', 'debug', 'silent'], 'info'),
        workspaces: {
            retentionMs: r.duration(workspaces.retention, 'workspaces.retention', 3_600_000, true),
            quotaBytes: r.size(workspaces.quota, 'workspaces.quota', 2 * 1024 ** 3)
        },
        limits: {
            maxBodyBytes: r.int(limits.max_body_bytes, 'limits.max_body_bytes', 1024 * 1024, 1024, 1 << 30),
            maxPromptBytes: r.int(limits.max_prompt_bytes, 'limits.max_prompt_bytes', 64 * 1024, 1, 1 << 30),
            rateLimitPerMinute: r.int(limits.rate_limit_per_minute, 'limits.rate_limit_per_minute', 600, 0, 1e9),
            maxQueuedRuns: r.int(limits.max_queued_runs, 'limits.max_queued_runs', 1000, 1, 1e9),
            retentionDays: r.int(limits.retention_days, 'limits.retention_days', 30, 1, 36500)
        },
        environments: []
    };
    if (root.environments === undefined) {
        config.environments.push(defaultEnvironment(base, workers));
    }
    else if (!Array.isArray(root.environments) || root.environments.length === 0) {
        problems.push(`environments: expected a non-empty list of environments, got ${show(root.environments)}`);
    }
    else {
        const seen = new Set();
        root.environments.forEach((item, index) => {
            const env = parseEnvironment(r, item, `environments[${index}]`, base, workers);
            if (seen.has(env.id))
                problems.push(`environments[${index}].id ${show(env.id)}: the id is used twice`);
            seen.add(env.id);
            config.environments.push(env);
        });
    }
    if (problems.length > 0) {
        throw new ConfigError(`${where}: ${problems.length === 1 ? problems[0] : `\n- ${problems.join('\n- ')}`}`);
    }
    return config;
}
function defaultEnvironment(base, workers) {
    return {
        id: 'local',
        name: 'Local directory (simulated agent)',
        source: base,
        setup: [],
        agent: { kind: 'simulated' },
        env: [],
        timeoutMs: 30 * 60_000,
        maxConcurrentRuns: workers
    };
}
function parseEnvironment(r, raw, at, base, workers) {
    const env = r.object(raw, at);
    r.known(env, at, ['id', 'name', 'source', 'setup', 'agent', 'env', 'timeout', 'max_concurrent_runs']);
    const id = r.string(env.id, `${at}.id`, '');
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id)) {
        r.problems.push(`${at}.id ${show(env.id)}: expected 1–64 letters, digits, '.', '_' or '-'`);
    }
    const agent = r.object(env.agent ?? { kind: 'simulated' }, `${at}.agent`);
    r.known(agent, `${at}.agent`, ['kind', 'command', 'prompt']);
    const kind = r.oneOf(agent.kind, `${at}.agent.kind`, ['simulated', 'command'], 'simulated');
    const parsedAgent = { kind };
    if (kind === 'command') {
        parsedAgent.command = r.strings(agent.command, `${at}.agent.command`);
        if (parsedAgent.command.length === 0) {
            r.problems.push(`${at}.agent.command: expected the program and its arguments, e.g. [claude, -p]`);
        }
        parsedAgent.prompt = r.oneOf(agent.prompt, `${at}.agent.prompt`, ['stdin', 'arg'], 'stdin');
    }
    const names = r.strings(env.env, `${at}.env`);
    for (const name of names) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
            r.problems.push(`${at}.env ${show(name)}: expected a variable name such as ANTHROPIC_API_KEY`);
        }
    }
    return {
        id,
        name: r.string(env.name, `${at}.name`, id),
        source: sourceOf(r.string(env.source, `${at}.source`, '.'), base),
        setup: r.strings(env.setup, `${at}.setup`),
        agent: parsedAgent,
        env: names,
        timeoutMs: r.duration(env.timeout, `${at}.timeout`, 30 * 60_000),
        maxConcurrentRuns: r.int(env.max_concurrent_runs, `${at}.max_concurrent_runs`, workers, 1, 256)
    };
}
/** A git URL (`https://…`, `ssh://…`, `file://…`, `git@host:repo`) or a path. */
function isRemoteSource(source) {
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[\w.-]+@[\w.-]+:/.test(source);
}
function sourceOf(source, base) {
    return isRemoteSource(source) ? source : (0,external_node_path_.resolve)(base, source);
}
function show(value) {
    if (value === undefined)
        return 'nothing';
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
/** Typed reads that record a problem (key, value, expected form) instead of throwing. */
class Reader {
    problems;
    constructor(problems) {
        this.problems = problems;
    }
    object(value, at) {
        if (value === undefined || value === null)
            return {};
        if (typeof value === 'object' && !Array.isArray(value))
            return value;
        this.problems.push(`${at || 'the file'} ${show(value)}: expected a mapping of keys to values`);
        return {};
    }
    known(object, at, keys) {
        for (const key of Object.keys(object)) {
            if (!keys.includes(key)) {
                this.problems.push(`${at ? `${at}.` : ''}${key}: unknown key; expected one of ${keys.join(', ')}`);
            }
        }
    }
    string(value, at, fallback) {
        if (value === undefined || value === null) {
            if (fallback === '')
                this.problems.push(`${at}: required, expected a string`);
            return fallback;
        }
        if (typeof value === 'string' && value.trim() !== '')
            return value.trim();
        if (typeof value === 'number')
            return String(value);
        this.problems.push(`${at} ${show(value)}: expected a non-empty string`);
        return fallback;
    }
    strings(value, at) {
        if (value === undefined || value === null)
            return [];
        if (Array.isArray(value) && value.every(item => typeof item === 'string' || typeof item === 'number')) {
            return value.map(String);
        }
        this.problems.push(`${at} ${show(value)}: expected a list of strings`);
        return [];
    }
    int(value, at, fallback, min, max) {
        if (value === undefined || value === null)
            return fallback;
        if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)
            return value;
        this.problems.push(`${at} ${show(value)}: expected a whole number from ${min} to ${max}`);
        return fallback;
    }
    duration(value, at, fallback, zeroAllowed = false) {
        if (value === undefined || value === null)
            return fallback;
        const ms = String(value).trim() === '0' ? 0 : parseDuration(String(value));
        // Node timers hold at most 2^31-1 ms (about 24.8 days).
        if (ms !== undefined && (ms > 0 || zeroAllowed) && ms <= MAX_TIMER_MS)
            return ms;
        this.problems.push(`${at} ${show(value)}: expected a duration such as 90s, 30m or 1h30m, at most 24 days`);
        return fallback;
    }
    size(value, at, fallback) {
        if (value === undefined || value === null)
            return fallback;
        const match = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?$/i.exec(String(value).trim());
        if (match) {
            const units = {
                b: 1,
                kb: 1e3,
                mb: 1e6,
                gb: 1e9,
                kib: 1024,
                mib: 1024 ** 2,
                gib: 1024 ** 3
            };
            const bytes = Math.round(Number(match[1]) * units[(match[2] ?? 'b').toLowerCase()]);
            if (bytes > 0)
                return bytes;
        }
        this.problems.push(`${at} ${show(value)}: expected a size such as 500MiB or 2GiB`);
        return fallback;
    }
    oneOf(value, at, options, fallback) {
        if (value === undefined || value === null)
            return fallback;
        if (options.includes(value))
            return value;
        this.problems.push(`${at} ${show(value)}: expected one of ${options.join(', ')}`);
        return fallback;
    }
    url(value, at) {
        if (value === undefined || value === null)
            return undefined;
        try {
            const url = new URL(String(value));
            if (url.protocol === 'http:' || url.protocol === 'https:')
                return url.href.replace(/\/+$/, '');
        }
        catch {
            // reported below
        }
        this.problems.push(`${at} ${show(value)}: expected an http(s) URL such as https://agents.example.com`);
        return undefined;
    }
}

// EXTERNAL MODULE: external "node:crypto"
var external_node_crypto_ = __webpack_require__(77598);
// EXTERNAL MODULE: external "node:zlib"
var external_node_zlib_ = __webpack_require__(38522);
;// CONCATENATED MODULE: ./src/executor/keys.ts
// API keys: `arx_` + 30 random base62 characters + a 6-character CRC32 checksum, so secret
// scanners can recognise a leaked key and the server can refuse a mistyped one without a lookup.
// Only the SHA-256 of a key is stored; keys are random enough that a fast hash is safe.


const KEY_PREFIX = 'arx_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 30;
const CHECK_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECK_LENGTH}}$`);
function base62(bytes, length) {
    let out = '';
    for (const byte of bytes) {
        // 248 = 62 × 4: rejecting higher bytes keeps every character equally likely.
        if (byte < 248)
            out += ALPHABET[byte % 62];
        if (out.length === length)
            return out;
    }
    return out + base62((0,external_node_crypto_.randomBytes)(length), length - out.length);
}
function checksum(body) {
    let value = (0,external_node_zlib_.crc32)(body);
    let out = '';
    for (let i = 0; i < CHECK_LENGTH; i++) {
        out = ALPHABET[value % 62] + out;
        value = Math.floor(value / 62);
    }
    return out;
}
function generateKey() {
    const body = base62((0,external_node_crypto_.randomBytes)(48), BODY_LENGTH);
    return `${KEY_PREFIX}${body}${checksum(body)}`;
}
function generateKeyId() {
    return `key_${base62((0,external_node_crypto_.randomBytes)(24), 16)}`;
}
/** Whether the text has the shape and checksum of a key (says nothing about whether it exists). */
function isWellFormedKey(key) {
    if (!KEY_PATTERN.test(key))
        return false;
    const body = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY_LENGTH);
    return checksum(body) === key.slice(KEY_PREFIX.length + BODY_LENGTH);
}
function hashKey(key) {
    return (0,external_node_crypto_.createHash)('sha256').update(key).digest('hex');
}
/** Constant-time comparison of two hex digests. */
function sameHash(a, b) {
    const left = Buffer.from(a, 'hex');
    const right = Buffer.from(b, 'hex');
    return left.length === right.length && (0,external_node_crypto_.timingSafeEqual)(left, right);
}
/** The part of a key that is safe to show in lists: its prefix and first characters. */
function keyHint(key) {
    return `${key.slice(0, KEY_PREFIX.length + 4)}…`;
}
/** Makes a new key for a team and stores its hash; the raw key is returned once and kept nowhere. */
async function issueKey(store, options) {
    const raw = generateKey();
    const id = generateKeyId();
    await store.createKey({
        id,
        ...options,
        hash: hashKey(raw),
        hint: keyHint(raw),
        created_at: new Date().toISOString(),
        revoked_at: null
    });
    return { raw, id };
}

// EXTERNAL MODULE: ./node_modules/fastify/fastify.js
var fastify = __webpack_require__(16703);
var fastify_default = /*#__PURE__*/__webpack_require__.n(fastify);
;// CONCATENATED MODULE: ./src/executor/store/types.ts
// The RunStore interface: everything the routes and the worker need from storage. SQLite (one
// machine) and PostgreSQL (several nodes on one database) implement it; routes and worker do not
// know which. Every read and write of a run is scoped to a team, except the worker's own (it runs
// every team's work).
/**
 * The store cannot be reached (PostgreSQL restarting, the network down). Requests answer 503 with
 * Retry-After; workers pause and try again. The message never holds the store's address.
 */
class StoreUnavailableError extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = 'StoreUnavailableError';
    }
}

// EXTERNAL MODULE: external "node:child_process"
var external_node_child_process_ = __webpack_require__(31421);
;// CONCATENATED MODULE: ./src/executor/agents/shell.ts
// Child processes for agents and commands, each in its own process group so that stopping it
// stops everything it started: SIGTERM first, SIGKILL after a grace period. A process counts as
// ended when it exits; pipes still held open by something it left behind (a daemon, `setsid`)
// are closed shortly after, so a run can never hang on them.

const KILL_GRACE_MS = 5000;
/** After exit, output still in the pipes gets this long to arrive. */
const DRAIN_MS = 250;
/** Runs a program in its own process group; the signal stops the group. */
function runInGroup(program, args, options) {
    const started = Date.now();
    if (options.signal.aborted)
        return Promise.resolve({ exitCode: null, signal: 'SIGTERM', durationMs: 0 });
    return new Promise(resolve => {
        const child = (0,external_node_child_process_.spawn)(program, args, {
            cwd: options.cwd,
            env: options.env,
            detached: true,
            stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']
        });
        child.stdout.on('data', chunk => options.onStdout?.(chunk));
        child.stderr.on('data', chunk => options.onStderr?.(chunk));
        if (options.stdin !== undefined) {
            child.stdin.on('error', () => undefined); // the program may exit without reading its input
            child.stdin.end(options.stdin);
        }
        const stop = () => stopGroup(child.pid);
        options.signal.addEventListener('abort', stop, { once: true });
        let settled = false;
        const settle = (result) => {
            if (settled)
                return;
            settled = true;
            options.signal.removeEventListener('abort', stop);
            resolve({ ...result, durationMs: Date.now() - started });
        };
        child.on('error', error => settle({ exitCode: null, signal: null, spawnError: error }));
        child.on('close', (exitCode, signal) => settle({ exitCode, signal }));
        child.on('exit', (exitCode, signal) => {
            setTimeout(() => {
                child.stdout.destroy();
                child.stderr.destroy();
                settle({ exitCode, signal });
            }, DRAIN_MS).unref();
        });
    });
}
/** Runs a shell command in the workspace (setup commands, `@sim run`). */
async function runShell(command, options) {
    const max = options.maxOutput ?? 64 * 1024;
    let output = '';
    const append = (chunk) => {
        output += chunk.toString('utf8');
        if (output.length > 2 * max)
            output = output.slice(-max);
    };
    const env = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? options.cwd,
        ...options.env
    };
    const result = await runInGroup('/bin/sh', ['-c', command], {
        cwd: options.cwd,
        env,
        signal: options.signal,
        onStdout: append,
        onStderr: append
    });
    if (result.spawnError)
        return { exitCode: 127, signal: null, output: result.spawnError.message, durationMs: result.durationMs };
    return {
        exitCode: result.exitCode,
        signal: result.signal,
        output: output.slice(-max),
        durationMs: result.durationMs
    };
}
/** SIGTERM to the whole process group, SIGKILL to whatever is left after the grace period. */
function stopGroup(pid, graceMs = KILL_GRACE_MS) {
    if (pid === undefined)
        return;
    try {
        process.kill(-pid, 'SIGTERM');
    }
    catch {
        return;
    }
    setTimeout(() => {
        try {
            process.kill(-pid, 'SIGKILL');
        }
        catch {
            // already gone
        }
    }, graceMs).unref();
}

;// CONCATENATED MODULE: ./src/executor/agents/command.ts
// The command agent: runs any agent CLI (`claude -p`, `codex exec`, `aider --message`, a script)
// in the workspace. The prompt goes on stdin or replaces `{prompt}` in the arguments; stdout and
// stderr stream into the transcript as they arrive; exit code 0 is success. Cancel and timeout
// stop the whole process group: SIGTERM, then SIGKILL after a grace period.

const FLUSH_MS = 200;
const FLUSH_BYTES = 16 * 1024;
const STDERR_TAIL_LINES = 10;
/** Variables every CLI needs to find itself and its home; the environment's `env` adds more. */
const BASE_VARIABLES = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM'];
const commandAgent = {
    async run(context) {
        const { command = [], prompt: mode = 'stdin' } = context.environment.agent;
        const args = command.map(arg => (mode === 'arg' ? arg.replaceAll('{prompt}', context.prompt) : arg));
        if (mode === 'arg' && !command.some(arg => arg.includes('{prompt}')))
            args.push(context.prompt);
        const [program, ...rest] = args;
        const env = { AGENT_RUN_ID: context.runId };
        for (const name of BASE_VARIABLES)
            if (process.env[name] !== undefined)
                env[name] = process.env[name];
        Object.assign(env, context.env);
        const streams = {
            stdout: new StreamRecorder('stdout', context),
            stderr: new StreamRecorder('stderr', context)
        };
        const result = await runInGroup(program, rest, {
            cwd: context.workspace,
            env,
            signal: context.signal,
            stdin: mode === 'stdin' ? context.prompt : undefined,
            onStdout: chunk => streams.stdout.push(chunk),
            onStderr: chunk => streams.stderr.push(chunk)
        });
        await Promise.all([streams.stdout.flush(), streams.stderr.flush()]);
        if (result.spawnError) {
            const why = result.spawnError.code === 'ENOENT' ? 'not found on PATH' : result.spawnError.message;
            return {
                state: 'FAILED',
                error_code: 'agent_failed',
                status_message: `agent command ${JSON.stringify(program)} could not start: ${why}`
            };
        }
        await context.record('exit', { exit_code: result.exitCode, signal: result.signal });
        if (result.exitCode === 0)
            return { state: 'SUCCEEDED' };
        const how = result.exitCode === null ? `was stopped by ${result.signal}` : `exited with code ${result.exitCode}`;
        const tail = streams.stderr.tail();
        return {
            state: 'FAILED',
            error_code: 'agent_failed',
            status_message: `agent ${how}${tail ? `; last lines of stderr:\n${tail}` : ''}`
        };
    }
};
/** Batches a stream's chunks into transcript events and keeps its last lines. */
class StreamRecorder {
    stream;
    context;
    pending = '';
    timer;
    lines = [];
    writing = Promise.resolve();
    constructor(stream, context) {
        this.stream = stream;
        this.context = context;
    }
    push(chunk) {
        const text = chunk.toString('utf8');
        this.pending += text;
        this.lines = [...this.lines, ...text.split('\n')].slice(-(STDERR_TAIL_LINES + 1));
        if (this.pending.length >= FLUSH_BYTES)
            void this.flush();
        else
            this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
    }
    flush() {
        clearTimeout(this.timer);
        this.timer = undefined;
        if (this.pending !== '') {
            const text = this.pending;
            this.pending = '';
            this.writing = this.writing.then(() => this.context.record('output', { stream: this.stream, text }));
        }
        return this.writing;
    }
    tail() {
        return this.lines.join('\n').trim().split('\n').slice(-STDERR_TAIL_LINES).join('\n');
    }
}

;// CONCATENATED MODULE: ./src/executor/agents/simulated.ts
// The simulated agent: deterministic, for testing workflows. Lines of the prompt that start with
// `@sim` are directives, run in order; everything else is the instruction, echoed as the answer.
//
//   @sim sleep <seconds>       wait (cancellable)
//   @sim say <text>            agent output
//   @sim run <shell command>   run it in the workspace; non-zero exit fails the run
//   @sim write <path> <text>   write a file in the workspace (`\n` in the text is a line break)
//   @sim fail <message>        end FAILED with that status message



const DIRECTIVE = /^@sim(?:\s+(\S+))?\s*(.*)$/;
const DEFAULT_PAUSE_MS = 300;
const simulatedAgent = {
    async run(context) {
        const instruction = [];
        let directives = 0;
        for (const line of context.prompt.split(/\r?\n/)) {
            if (context.signal.aborted)
                return { state: 'FAILED', error_code: 'cancelled', status_message: 'stopped' };
            const match = DIRECTIVE.exec(line.trim());
            if (!match) {
                instruction.push(line);
                continue;
            }
            directives++;
            const [, verb = '', rest = ''] = match;
            const failure = await directive(context, verb, rest.trim());
            if (failure)
                return failure;
        }
        if (directives === 0)
            await sleep(DEFAULT_PAUSE_MS, context.signal);
        if (context.signal.aborted)
            return { state: 'FAILED', error_code: 'cancelled', status_message: 'stopped' };
        const text = instruction.join('\n').trim();
        if (text !== '')
            await context.record('message', { text: `Simulated agent received the instruction:\n${text}` });
        return { state: 'SUCCEEDED' };
    }
};
async function directive(context, verb, rest) {
    switch (verb) {
        case 'sleep': {
            const seconds = Number(rest);
            if (rest === '' || !Number.isFinite(seconds) || seconds < 0) {
                return invalid(`@sim sleep ${rest}`, 'expected a number of seconds, e.g. @sim sleep 2.5');
            }
            await sleep(seconds * 1000, context.signal);
            return undefined;
        }
        case 'say':
            await context.record('message', { text: rest });
            return undefined;
        case 'run': {
            if (rest === '')
                return invalid('@sim run', 'expected a shell command, e.g. @sim run npm test');
            const result = await runShell(rest, {
                cwd: context.workspace,
                env: context.env,
                signal: context.signal
            });
            await context.record('command', {
                command: rest,
                exit_code: result.exitCode,
                output: result.output,
                duration_ms: result.durationMs
            });
            if (result.exitCode === 0 || context.signal.aborted)
                return undefined;
            const how = result.exitCode === null ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
            return { state: 'FAILED', error_code: 'command_failed', status_message: `command \`${rest}\` ${how}` };
        }
        case 'write': {
            const space = rest.search(/\s/);
            const path = space < 0 ? rest : rest.slice(0, space);
            const text = space < 0 ? '' : rest.slice(space + 1).replace(/\\n/g, '\n');
            const target = (0,external_node_path_.resolve)(context.workspace, path);
            const inside = (0,external_node_path_.relative)(context.workspace, target);
            if (path === '' || inside.startsWith('..') || inside === '') {
                return invalid(`@sim write ${path}`, 'expected a file path inside the workspace, e.g. @sim write notes/a.md Hello');
            }
            const existed = (0,external_node_fs_.existsSync)(target);
            (0,external_node_fs_.mkdirSync)((0,external_node_path_.dirname)(target), { recursive: true });
            (0,external_node_fs_.writeFileSync)(target, text);
            await context.record('file', {
                path: inside,
                change: existed ? 'modified' : 'added',
                bytes: Buffer.byteLength(text)
            });
            return undefined;
        }
        case 'fail':
            return {
                state: 'FAILED',
                error_code: 'agent_failed',
                status_message: rest || 'the simulated agent was told to fail'
            };
        default:
            return invalid(`@sim ${verb}`, 'expected one of sleep, say, run, write, fail');
    }
}
function invalid(what, expected) {
    return {
        state: 'FAILED',
        error_code: 'agent_failed',
        status_message: `invalid directive ${what}: ${expected}`
    };
}
function sleep(ms, signal) {
    return new Promise(resolvePromise => {
        if (signal.aborted)
            return resolvePromise();
        // setTimeout overflows past 2^31-1 ms (about 24.8 days); no run lives that long anyway.
        const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
        function done() {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            resolvePromise();
        }
        signal.addEventListener('abort', done, { once: true });
    });
}

;// CONCATENATED MODULE: ./src/executor/workspace/workspace.ts
// Each run gets its own workspace under DATA_DIR/workspaces/<run id>: a detached git worktree when
// the environment's source is a git repository (a local path, or a URL cloned once into
// DATA_DIR/sources/ and fetched before each run), a copy otherwise. Concurrent runs never see each
// other's changes and the source is never written to. A copy is snapshotted in a fresh git
// repository so that, either way, the files the run changed come out as one unified diff.






const exec = (0,external_node_util_.promisify)(external_node_child_process_.execFile);
const GIT_IDENTITY = ['-c', 'user.name=agent-executor', '-c', 'user.email=agent-executor@localhost'];
const MAX_DIFF_BYTES = 1024 * 1024;
/** Runs a short shell script (git commands) in a directory; errors carry its stderr, redacted. */
async function shell(script, cwd) {
    try {
        const { stdout } = await exec('/bin/sh', ['-c', script], { cwd, maxBuffer: 64 * 1024 * 1024 });
        return stdout;
    }
    catch (error) {
        const stderr = String(error.stderr ?? '').trim();
        throw new Error(redactUrls(`git failed: ${stderr.split('\n').slice(-3).join(' ') || error.message}`));
    }
}
/** Hides the credentials a git URL may carry (`https://user:token@host/…`). */
function redactUrls(text) {
    return text.replace(/\/\/[^/@\s]+@/g, '//***@');
}
async function git(args, cwd) {
    try {
        const { stdout } = await exec('git', cwd ? ['-C', cwd, ...args] : args, { maxBuffer: 64 * 1024 * 1024 });
        return stdout;
    }
    catch (error) {
        // The error's own message holds the whole command line; say which git command failed and why.
        const stderr = String(error.stderr ?? '').trim();
        const why = stderr.split('\n').slice(-3).join(' ') || error.message;
        throw new Error(redactUrls(`git ${args[0]} failed: ${why}`));
    }
}
/** Whether a directory is inside a git repository with a commit, cached: sources do not move. */
const topLevels = new Map();
function gitTopLevel(dir) {
    let top = topLevels.get(dir);
    if (!top) {
        top = git(['rev-parse', '--show-toplevel', '--verify', '--quiet', 'HEAD'], dir)
            .then(out => out.split('\n')[0].trim() || undefined)
            .catch(() => undefined);
        topLevels.set(dir, top);
    }
    return top;
}
/** A remote source is cloned once (bare) and fetched before each run. */
async function remoteCache(source, dataDir) {
    const cache = (0,external_node_path_.join)(dataDir, 'sources', (0,external_node_crypto_.createHash)('sha256').update(source).digest('hex').slice(0, 16) + '.git');
    if (!(0,external_node_fs_.existsSync)(cache)) {
        (0,external_node_fs_.mkdirSync)((0,external_node_path_.join)(dataDir, 'sources'), { recursive: true });
        await git(['clone', '--bare', '--quiet', source, cache]);
    }
    else {
        await git(['fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*'], cache);
    }
    return cache;
}
async function createWorkspace(environment, dataDir, runId) {
    const root = (0,external_node_path_.join)(dataDir, 'workspaces', runId);
    (0,external_node_fs_.mkdirSync)((0,external_node_path_.join)(dataDir, 'workspaces'), { recursive: true });
    let repository;
    let sub = '';
    if (isRemoteSource(environment.source)) {
        repository = await remoteCache(environment.source, dataDir);
    }
    else {
        if (!(0,external_node_fs_.existsSync)(environment.source))
            throw new Error(`source ${environment.source} does not exist`);
        repository = await gitTopLevel(environment.source);
        if (repository)
            sub = (0,external_node_path_.relative)(repository, environment.source);
    }
    let kind;
    if (repository) {
        await git(['worktree', 'add', '--detach', '--quiet', root, 'HEAD'], repository);
        kind = 'worktree';
    }
    else {
        copyTree(environment.source, root, dataDir);
        await git(['init', '--quiet'], root);
        await git([...GIT_IDENTITY, 'add', '--all'], root);
        await git([...GIT_IDENTITY, 'commit', '--quiet', '--allow-empty', '--no-verify', '-m', 'workspace baseline'], root);
        kind = 'copy';
    }
    return {
        path: sub ? (0,external_node_path_.join)(root, sub) : root,
        root,
        kind,
        async diff() {
            const separator = '\u0000--agent-run-diff--\u0000';
            const out = await shell(`git add --all && git diff --cached --name-status --no-renames HEAD && printf '${separator.split('\u0000').join('\\0')}' && git diff --cached --no-color --no-ext-diff HEAD`, root);
            const cut = out.indexOf(separator);
            const names = out.slice(0, cut);
            const files = names
                .split('\n')
                .filter(Boolean)
                .map(line => {
                const [status, ...path] = line.split('\t');
                const change = status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified';
                return { path: path.join('\t'), change };
            });
            let diff = files.length > 0 ? await git(['diff', '--cached', '--no-color', '--no-ext-diff', 'HEAD'], root) : '';
            const truncated = Buffer.byteLength(diff) > MAX_DIFF_BYTES;
            if (truncated)
                diff = `${diff.slice(0, MAX_DIFF_BYTES)}\n[diff cut at ${MAX_DIFF_BYTES} bytes]\n`;
            return { diff, truncated, files };
        },
        size: () => diskUsage(root),
        release() {
            const now = new Date();
            if ((0,external_node_fs_.existsSync)(root))
                (0,external_node_fs_.utimesSync)(root, now, now);
        }
    };
}
/**
 * Removes released workspaces older than `retentionMs` (and any left by a crashed process), then
 * lets git forget worktrees whose directories are gone.
 */
async function sweepWorkspaces(dataDir, environments, retentionMs, active) {
    const dir = (0,external_node_path_.join)(dataDir, 'workspaces');
    if (!(0,external_node_fs_.existsSync)(dir))
        return 0;
    let removed = 0;
    for (const name of (0,external_node_fs_.readdirSync)(dir)) {
        if (active.has(name))
            continue;
        const path = (0,external_node_path_.join)(dir, name);
        if (Date.now() - (0,external_node_fs_.statSync)(path).mtimeMs < retentionMs)
            continue;
        await removeWorkspace(path);
        removed++;
    }
    if (removed > 0) {
        const repositories = new Set();
        for (const env of environments) {
            if (isRemoteSource(env.source)) {
                repositories.add((0,external_node_path_.join)(dataDir, 'sources', (0,external_node_crypto_.createHash)('sha256').update(env.source).digest('hex').slice(0, 16) + '.git'));
            }
            else {
                const top = await gitTopLevel(env.source);
                if (top)
                    repositories.add(top);
            }
        }
        for (const repository of repositories)
            await git(['worktree', 'prune'], repository).catch(() => undefined);
    }
    return removed;
}
/** Removes a workspace; a worktree is also unregistered from its repository. */
async function removeWorkspace(path) {
    const link = (0,external_node_path_.join)(path, '.git');
    try {
        if ((0,external_node_fs_.existsSync)(link) && (0,external_node_fs_.statSync)(link).isFile()) {
            const gitdir = /^gitdir:\s*(.+)$/m.exec((0,external_node_fs_.readFileSync)(link, 'utf8'))?.[1]?.trim();
            // gitdir is <repository git dir>/worktrees/<name>
            if (gitdir)
                await git(['--git-dir', (0,external_node_path_.dirname)((0,external_node_path_.dirname)(gitdir)), 'worktree', 'remove', '--force', path]);
        }
    }
    catch {
        // fall through: remove the files, and `worktree prune` below forgets the entry
    }
    (0,external_node_fs_.rmSync)(path, { recursive: true, force: true });
}
/** Bytes on disk under a directory, as `du` counts them (apparent sizes, links not followed). */
async function diskUsage(dir) {
    const { stdout } = await exec('du', ['-s', '--apparent-size', '--block-size=1', dir]);
    return Number(stdout.split('\t')[0]);
}
/** Copies a directory tree, leaving out `skip` (the executor's own data dir may live inside it). */
function copyTree(from, to, skip) {
    (0,external_node_fs_.mkdirSync)(to, { recursive: true });
    for (const entry of (0,external_node_fs_.readdirSync)(from, { withFileTypes: true })) {
        const source = (0,external_node_path_.join)(from, entry.name);
        const target = (0,external_node_path_.join)(to, entry.name);
        if (source === skip)
            continue;
        if (entry.isDirectory())
            copyTree(source, target, skip);
        else if (entry.isSymbolicLink())
            (0,external_node_fs_.symlinkSync)((0,external_node_fs_.readlinkSync)(source), target);
        else if (entry.isFile())
            (0,external_node_fs_.copyFileSync)(source, target);
    }
}

;// CONCATENATED MODULE: ./src/executor/worker/pool.ts
// The worker pool: claims QUEUED runs up to the concurrency limits, holds a lease on each while its
// agent works, and ends it. A run whose worker died (lease expired, or found INPROGRESS at start-up
// of a single-node store) becomes FAILED executor_restarted: never silently re-run, because agents
// have side effects. Every node sweeps for expired leases, API-only nodes too: the node that held
// one may never come back. While the store is unreachable the pool pauses and its writes retry.






const AGENTS = { simulated: simulatedAgent, command: commandAgent };
const QUOTA_CHECK_MS = 2000;
/** How long a finished run's outcome is retried while the store is unreachable. */
const FINISH_RETRY_MS = 10 * 60_000;
/** The outcome of a run its worker stopped. */
function stopped(reason, environment, quotaBytes) {
    if (reason === 'timeout') {
        return {
            state: 'FAILED',
            error_code: 'timeout',
            status_message: `the run exceeded its time limit of ${Math.round(environment.timeoutMs / 1000)} s`
        };
    }
    if (reason === 'quota') {
        return {
            state: 'FAILED',
            error_code: 'workspace_quota_exceeded',
            status_message: `the workspace grew past its disk quota of ${quotaBytes >= 1024 ** 2 ? `${Math.round(quotaBytes / 1024 ** 2)} MiB` : `${Math.round(quotaBytes / 1024)} KiB`}`
        };
    }
    return {
        state: 'FAILED',
        error_code: 'executor_restarted',
        status_message: 'the executor shut down before the run finished'
    };
}
class WorkerPool {
    store;
    config;
    log;
    runsWork;
    owner = `node-${(0,external_node_crypto_.randomUUID)()}`;
    claims = 0;
    /**
     * Claims whose answer was lost (the store went away mid-claim): each may have committed. Every
     * claim has its own lease owner, so once the store is back the pool asks for the run leased to
     * it and runs it; without this the run would sit INPROGRESS until its lease expired, unrun.
     */
    uncertain = [];
    active = new Map();
    environments;
    timers = [];
    unsubscribe;
    draining = false;
    pumping = false;
    pumpAgain = false;
    constructor(store, config, log, 
    /** False on API-only nodes: they sweep abandoned runs and prune, but run nothing. */
    runsWork = true) {
        this.store = store;
        this.config = config;
        this.log = log;
        this.runsWork = runsWork;
        this.environments = new Map(config.environments.map(env => [env.id, env]));
    }
    /** Fails runs left INPROGRESS by a previous process, then starts claiming. */
    async start() {
        // On a store of its own, whatever is INPROGRESS was this data dir's previous process's. On a
        // shared store other nodes are running theirs: only expired leases are abandoned.
        const orphans = await this.store.failAbandoned(!this.store.shared, now(), 'the executor restarted while this run was in progress; it was not re-run');
        if (orphans.length > 0)
            this.log.warn({ runs: orphans.length }, 'failed runs left in progress by a previous process');
        if (this.runsWork)
            this.unsubscribe = this.store.onChange(run => this.onChange(run));
        const every = (ms, work) => {
            const timer = setInterval(() => void work().then(() => (this.storeDown = false), error => this.timerFailed(error)), ms);
            timer.unref();
            this.timers.push(timer);
        };
        every(Math.max(200, Math.floor(this.config.leaseMs / 3)), () => this.heartbeat());
        // Expired leases are looked for often, so another node's runs fail soon after its lease ends.
        every(Math.max(100, Math.min(1000, Math.floor(this.config.leaseMs / 10))), () => this.reap());
        every(3_600_000, () => this.prune());
        if (this.runsWork) {
            // The fallback behind change notifications: a claim attempt a second when idle (every 5 s on
            // a shared store, whose own fallback poll re-announces changes a node missed).
            every(this.store.shared ? 5000 : 1000, () => this.pump());
            every(Math.min(60_000, Math.max(1000, this.config.workspaces.retentionMs / 2)), () => this.sweep());
            await this.sweep();
        }
        await this.prune();
        await this.pump();
    }
    storeDown = false;
    /** A timer's failure: one warning when the store goes away (not one a second), errors as errors. */
    timerFailed(error) {
        if (error instanceof StoreUnavailableError) {
            if (!this.storeDown)
                this.log.warn({ err: error }, 'store unavailable: the worker pauses until it is back');
            this.storeDown = true;
            return;
        }
        this.log.error({ err: error }, 'worker timer failed');
    }
    /** A write the run's outcome depends on: retried while the store is unreachable, up to `forMs`. */
    async persist(work, forMs) {
        const until = Date.now() + forMs;
        for (let delay = 100;; delay = Math.min(delay * 2, 1000)) {
            try {
                const result = await work();
                this.storeDown = false;
                return result;
            }
            catch (error) {
                if (!(error instanceof StoreUnavailableError) || Date.now() + delay > until)
                    throw error;
                this.timerFailed(error);
                await new Promise(resolve => setTimeout(resolve, delay));
            }
        }
    }
    get runningCount() {
        return this.active.size;
    }
    /** Stops claiming, lets running runs finish up to the grace period, then stops them. */
    async stop(graceMs) {
        this.draining = true;
        const all = () => Promise.all([...this.active.values()].map(active => active.done));
        const timer = new Promise(resolve => setTimeout(resolve, graceMs).unref());
        await Promise.race([all(), timer]);
        for (const active of this.active.values())
            active.controller.abort('shutdown');
        await all();
        for (const timer of this.timers)
            clearInterval(timer);
        this.unsubscribe?.();
    }
    onChange(run) {
        if (run.state === 'QUEUED')
            this.pumpSafely();
        const active = this.active.get(run.run_id);
        if (active && run.state === 'CANCELLED')
            active.controller.abort('cancelled');
    }
    /** A pump whose failure (the store being busy or full, say) is logged; the next tick tries again. */
    pumpSafely() {
        this.pump().catch(error => this.log.error({ err: error }, 'could not claim runs'));
    }
    /** Claims runs while there is capacity. Re-entrant calls coalesce into one more pass. */
    async pump() {
        if (!this.runsWork)
            return;
        if (this.pumping) {
            this.pumpAgain = true;
            return;
        }
        this.pumping = true;
        try {
            do {
                this.pumpAgain = false;
                await this.settleUncertainClaims();
                while (!this.draining && this.active.size < this.config.workers) {
                    const owner = `${this.owner}/${++this.claims}`;
                    let run;
                    try {
                        run = await this.store.claimNext(owner, this.config.leaseMs, this.fullEnvironments(), now());
                    }
                    catch (error) {
                        if (error instanceof StoreUnavailableError)
                            this.uncertain.push(owner);
                        throw error;
                    }
                    if (!run)
                        break;
                    this.launch(run);
                }
            } while (this.pumpAgain);
        }
        finally {
            this.pumping = false;
        }
    }
    async settleUncertainClaims() {
        while (this.uncertain.length > 0) {
            const owner = this.uncertain[0];
            const run = await this.store.findClaim(owner);
            this.uncertain.shift();
            if (run && !this.active.has(run.run_id)) {
                this.log.info({ run_id: run.run_id }, 'a claim whose answer was lost had committed: running the run');
                this.launch(run);
            }
        }
    }
    fullEnvironments() {
        const counts = new Map();
        for (const { run } of this.active.values())
            counts.set(run.environment_id, (counts.get(run.environment_id) ?? 0) + 1);
        return [...this.environments.values()]
            .filter(env => (counts.get(env.id) ?? 0) >= env.maxConcurrentRuns)
            .map(env => env.id);
    }
    launch(run) {
        const controller = new AbortController();
        const active = { run, controller, done: Promise.resolve() };
        this.active.set(run.run_id, active);
        active.done = this.execute(run, controller)
            .catch(error => this.log.error({ err: error, run_id: run.run_id }, 'run execution failed'))
            .finally(() => {
            this.active.delete(run.run_id);
            this.pumpSafely();
        });
    }
    async execute(run, controller) {
        const environment = this.environments.get(run.environment_id);
        const record = (kind, data) => this.persist(() => this.store.appendEvent(run.run_id, kind, data, now()), this.config.leaseMs).then(() => undefined);
        if (!environment) {
            await this.finish(run, {
                state: 'FAILED',
                error_code: 'environment_not_found',
                status_message: `environment ${run.environment_id} is no longer configured`
            });
            return;
        }
        const timeout = setTimeout(() => controller.abort('timeout'), environment.timeoutMs);
        let quotaWatch;
        let result;
        let workspace;
        try {
            workspace = await createWorkspace(environment, this.config.dataDir, run.run_id);
            const watched = workspace;
            let measuring = false;
            quotaWatch = setInterval(() => {
                if (measuring)
                    return;
                measuring = true;
                watched
                    .size()
                    .then(bytes => {
                    if (bytes > this.config.workspaces.quotaBytes)
                        controller.abort('quota');
                })
                    .catch(error => this.log.warn({ err: error, run_id: run.run_id }, 'could not measure a workspace'))
                    .finally(() => (measuring = false));
            }, QUOTA_CHECK_MS);
            const env = Object.fromEntries(environment.env
                .filter(name => process.env[name] !== undefined)
                .map(name => [name, process.env[name]]));
            result = await this.setup(environment, workspace.path, env, controller.signal, record);
            if (result.state === 'SUCCEEDED' && !controller.signal.aborted) {
                const agent = AGENTS[environment.agent.kind];
                if (!agent)
                    throw new Error(`agent kind ${environment.agent.kind} is not available in this executor`);
                result = await agent.run({
                    runId: run.run_id,
                    prompt: run.prompt,
                    workspace: workspace.path,
                    environment,
                    env,
                    signal: controller.signal,
                    record
                });
            }
        }
        catch (error) {
            this.log.error({ err: error, run_id: run.run_id }, 'agent failed to run');
            result = {
                state: 'FAILED',
                error_code: 'agent_failed',
                status_message: `the agent could not run: ${error.message}`
            };
        }
        finally {
            clearTimeout(timeout);
            clearInterval(quotaWatch);
        }
        const reason = controller.signal.reason;
        if (controller.signal.aborted && reason !== 'cancelled' && reason !== 'lease_lost') {
            result = stopped(reason, environment, this.config.workspaces.quotaBytes);
        }
        if (workspace) {
            try {
                const changes = await workspace.diff();
                if (changes.files.length > 0)
                    await record('diff', changes);
            }
            catch (error) {
                this.log.warn({ err: error, run_id: run.run_id }, 'could not record the diff');
            }
            workspace.release();
        }
        await this.finish(run, result);
    }
    async setup(environment, cwd, env, signal, record) {
        for (const command of environment.setup) {
            if (signal.aborted)
                break;
            const result = await runShell(command, { cwd, env, signal });
            await record('setup', {
                command,
                exit_code: result.exitCode,
                output: result.output,
                duration_ms: result.durationMs
            });
            if (result.exitCode !== 0) {
                return {
                    state: 'FAILED',
                    error_code: 'setup_failed',
                    status_message: `setup command \`${command}\` exited with code ${result.exitCode}`
                };
            }
        }
        return { state: 'SUCCEEDED' };
    }
    async finish(run, outcome) {
        const at = now();
        const finished = await this.persist(() => this.store.finishRun(run.run_id, run.lease_owner, outcome, at), FINISH_RETRY_MS);
        if (!finished) {
            // Cancelled meanwhile, failed as abandoned, or finished by an earlier try whose answer was lost.
            const stored = await this.store.getRunAnyTeam(run.run_id).catch(() => undefined);
            this.log.info({ run_id: run.run_id, state: stored?.state, error_code: stored?.error_code }, 'the run was no longer held by this worker when its agent stopped');
        }
    }
    heartbeating = false;
    /**
     * Renews every lease this pool holds. While the store is unreachable it keeps trying (every
     * second at most), so the leases are renewed as soon as the store is back: an outage of up to
     * about two thirds of a lease costs no run.
     */
    async heartbeat() {
        if (this.heartbeating)
            return;
        this.heartbeating = true;
        try {
            for (const [runId, active] of this.active) {
                const held = await this.persist(() => this.store.renewLease(runId, active.run.lease_owner, this.config.leaseMs), this.config.leaseMs);
                if (!held && !active.controller.signal.aborted)
                    active.controller.abort('lease_lost');
            }
        }
        finally {
            this.heartbeating = false;
        }
    }
    async reap() {
        const failed = await this.store.failAbandoned(false, now(), 'the worker running this run stopped renewing its lease; it was not re-run');
        if (failed.length > 0)
            this.log.warn({ runs: failed.map(run => run.run_id) }, 'failed runs whose worker stopped renewing its lease');
    }
    async prune() {
        const before = new Date(Date.now() - this.config.limits.retentionDays * 86_400_000).toISOString();
        const pruned = await this.store.pruneFinished(before);
        if (pruned > 0)
            this.log.info({ pruned }, 'pruned finished runs past retention');
    }
    async sweep() {
        const removed = await sweepWorkspaces(this.config.dataDir, this.config.environments, this.config.workspaces.retentionMs, new Set(this.active.keys()));
        if (removed > 0)
            this.log.info({ removed }, 'removed workspaces past retention');
    }
}
function now() {
    return new Date().toISOString();
}

// EXTERNAL MODULE: external "node:http"
var external_node_http_ = __webpack_require__(37067);
;// CONCATENATED MODULE: ./src/executor/server/problem.ts
// Every error answer is RFC 7807 problem+json with an error_code from the error reference.


class ProblemError extends Error {
    code;
    detail;
    headers;
    statusOverride;
    constructor(code, detail, headers = {}, statusOverride) {
        super(detail);
        this.code = code;
        this.detail = detail;
        this.headers = headers;
        this.statusOverride = statusOverride;
    }
    get status() {
        return this.statusOverride ?? ERROR_CODES[this.code].status ?? 500;
    }
}
const TITLES = {
    400: 'Bad Request',
    401: 'Unauthorized',
    404: 'Not Found',
    409: 'Conflict',
    413: 'Content Too Large',
    415: 'Unsupported Media Type',
    422: 'Unprocessable Content',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    503: 'Service Unavailable'
};
/**
 * The answer to a request Node's HTTP parser refused before Fastify saw it (a header over the size
 * limit, a control byte in a header, a broken request line): written straight to the socket, but
 * problem+json like every other error.
 */
function writeClientError(error, socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed)
        return;
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const detail = status === 431
        ? 'the request line and headers are larger than the server accepts'
        : status === 408
            ? 'the request was not received in time'
            : `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`;
    const body = JSON.stringify({
        type: '/api/v1/errors#invalid_request',
        title: external_node_http_.STATUS_CODES[status],
        status,
        detail,
        error_code: 'invalid_request',
        retryable: ERROR_CODES.invalid_request.retryable
    });
    if (socket.writable) {
        socket.write(`HTTP/1.1 ${status} ${external_node_http_.STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(error);
}
function sendProblem(reply, problem) {
    const status = problem.status;
    for (const [name, value] of Object.entries(problem.headers))
        reply.header(name, value);
    return reply
        .code(status)
        .type('application/problem+json')
        .send({
        type: `/api/v1/errors#${problem.code}`,
        title: TITLES[status] ?? 'Error',
        status,
        detail: problem.detail,
        error_code: problem.code,
        retryable: ERROR_CODES[problem.code].retryable,
        instance: reply.request.url.split('?')[0],
        request_id: String(reply.request.id)
    });
}

;// CONCATENATED MODULE: ./src/executor/server/auth.ts
// Bearer-key authentication and the per-key rate limit.


const CHALLENGE = { 'www-authenticate': 'Bearer realm="agent-executor"' };
async function authenticate(store, request) {
    const header = request.headers.authorization;
    if (!header)
        throw new ProblemError('unauthenticated', 'missing Authorization header; expected `Bearer <API key>`', CHALLENGE);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match)
        throw new ProblemError('unauthenticated', 'Authorization header is not of the form `Bearer <API key>`', CHALLENGE);
    const key = match[1];
    if (!isWellFormedKey(key)) {
        throw new ProblemError('unauthenticated', 'the API key is malformed (wrong prefix, length or checksum)', CHALLENGE);
    }
    const hash = hashKey(key);
    const record = await store.findKeyByHash(hash);
    if (!record || !sameHash(record.hash, hash) || record.revoked_at !== null) {
        throw new ProblemError('unauthenticated', 'the API key is unknown or revoked', CHALLENGE);
    }
    return { keyId: record.id, team: record.team, kind: record.kind, name: record.name };
}
/** A token bucket per key: `perMinute` requests a minute, in bursts of up to the same number. */
class RateLimiter {
    perMinute;
    buckets = new Map();
    constructor(perMinute) {
        this.perMinute = perMinute;
    }
    /** Takes a token; returns the seconds to wait when none is left. */
    take(key, now = Date.now()) {
        if (this.perMinute <= 0)
            return undefined;
        const rate = this.perMinute / 60_000;
        const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
        bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * rate);
        bucket.at = now;
        this.buckets.set(key, bucket);
        if (bucket.tokens >= 1) {
            bucket.tokens -= 1;
            return undefined;
        }
        if (this.buckets.size > 10_000)
            this.sweep(now);
        return Math.max(1, Math.ceil((1 - bucket.tokens) / rate / 1000));
    }
    sweep(now) {
        for (const [key, bucket] of this.buckets)
            if (now - bucket.at > 60_000)
                this.buckets.delete(key);
    }
}

;// CONCATENATED MODULE: ./src/executor/server/changes.ts
// Wakes held reads (`Prefer: wait`) the moment their run changes: one store listener, dispatched
// by run id, so a thousand held reads cost nothing per unrelated change. It remembers the newest
// version heard of each recently changed run: a change heard between a read's look at the run and
// its wait (another node's notification can arrive then) ends the wait at once instead of being
// missed.
class ChangeHub {
    waiters = new Map();
    heard = new Map();
    changes = 0;
    unsubscribe;
    constructor(store) {
        this.unsubscribe = store.onChange((change) => {
            const seen = this.heard.get(change.run_id);
            if (!seen || seen.version < change.version)
                this.heard.set(change.run_id, { version: change.version, at: Date.now() });
            if (++this.changes % 1000 === 0)
                this.forget();
            const set = this.waiters.get(change.run_id);
            if (set)
                for (const wake of [...set])
                    wake();
        });
    }
    /** A held read lasts at most a minute: what is older than that can no longer matter. */
    forget() {
        const before = Date.now() - 120_000;
        for (const [runId, seen] of this.heard)
            if (seen.at < before)
                this.heard.delete(runId);
    }
    /**
     * Resolves when the run changes past `version` (at once if that was already heard), after `ms`,
     * or when `signal` fires, whichever is first.
     */
    wait(runId, version, ms, signal) {
        if ((this.heard.get(runId)?.version ?? 0) > version)
            return Promise.resolve();
        return new Promise(resolve => {
            let set = this.waiters.get(runId);
            if (!set)
                this.waiters.set(runId, (set = new Set()));
            const wake = () => {
                clearTimeout(timer);
                signal.removeEventListener('abort', wake);
                set.delete(wake);
                if (set.size === 0)
                    this.waiters.delete(runId);
                resolve();
            };
            const timer = setTimeout(wake, ms);
            set.add(wake);
            if (signal.aborted)
                wake();
            else
                signal.addEventListener('abort', wake, { once: true });
        });
    }
    /** Releases every held read (at shutdown). */
    wakeAll() {
        for (const set of [...this.waiters.values()])
            for (const wake of [...set])
                wake();
    }
    close() {
        this.wakeAll();
        this.unsubscribe();
    }
}

;// CONCATENATED MODULE: ./src/executor/server/records.ts
// How stored runs look on the wire, and the pieces derived from them: ETags and session links.

const WITH_MESSAGE = new Set(['FAILED', 'CANCELLED', 'ERROR']);
const WITH_LINK = new Set(['INPROGRESS', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ERROR']);
/** Tokens never change for a run, and reads ask for them often: remember the recent ones. */
const TOKEN_CACHE_SIZE = 10_000;
class SessionLinks {
    secret;
    publicUrl;
    tokens = new Map();
    constructor(secret, publicUrl) {
        this.secret = secret;
        this.publicUrl = publicUrl;
    }
    token(runId) {
        let token = this.tokens.get(runId);
        if (token === undefined) {
            token = (0,external_node_crypto_.createHmac)('sha256', this.secret).update(runId).digest('base64url').slice(0, 32);
            if (this.tokens.size >= TOKEN_CACHE_SIZE)
                this.tokens.delete(this.tokens.keys().next().value);
            this.tokens.set(runId, token);
        }
        return token;
    }
    verify(runId, token) {
        if (typeof token !== 'string')
            return false;
        const expected = Buffer.from(this.token(runId));
        const given = Buffer.from(token);
        return expected.length === given.length && (0,external_node_crypto_.timingSafeEqual)(expected, given);
    }
    link(run) {
        if (!WITH_LINK.has(run.state) || run.started_at === null)
            return undefined;
        return `${this.publicUrl()}/sessions/${encodeURIComponent(run.run_id)}?token=${this.token(run.run_id)}`;
    }
}
function etagOf(run) {
    return `"v${run.version}"`;
}
function toRecord(run, links) {
    const extra = JSON.parse(run.extra);
    const record = {
        ...extra,
        run_id: run.run_id,
        state: run.state,
        title: run.title,
        prompt: run.prompt,
        environment_id: run.environment_id,
        created_at: run.created_at,
        updated_at: run.updated_at,
        started_at: run.started_at,
        completed_at: run.completed_at,
        creator: { type: run.creator_type, uid: run.creator_uid, display_name: run.creator_name },
        agent_config: JSON.parse(run.config),
        source: 'API'
    };
    if (WITH_MESSAGE.has(run.state) && run.status_message !== null)
        record.status_message = run.status_message;
    if (run.error_code !== null)
        record.error_code = run.error_code;
    const link = links.link(run);
    if (link)
        record.session_link = link;
    return record;
}

// EXTERNAL MODULE: ./node_modules/typebox/build/index.mjs + 317 modules
var build = __webpack_require__(84487);
;// CONCATENATED MODULE: ./src/api/schemas.ts
// JSON schemas of the contract (TypeBox), for the executor's validation and its OpenAPI document.
// The compile-time checks at the bottom keep them in step with the plain types in ./run.ts.


const Timestamp = build/* default.String */.Ay$.String({ format: 'date-time', description: 'RFC 3339 timestamp' });
const Nullable = (schema) => build/* default.Union */.Ay$.Union([schema, build/* default.Null */.Ay$.Null()]);
const RunStateSchema = build/* default.String */.Ay$.String({
    description: `Run state. Known values: ${KNOWN_STATES.join(', ')}; clients must accept others.`,
    examples: ['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED']
});
const RunConfigSchema = build/* default.Object */.Ay$.Object({ environment_id: build/* default.String */.Ay$.String({ minLength: 1, description: 'Environment the run executes in.' }) }, {
    additionalProperties: true,
    description: 'Run configuration; fields beyond environment_id are kept as sent.'
});
const CreateRunRequestSchema = build/* default.Object */.Ay$.Object({
    prompt: build/* default.String */.Ay$.String({ description: 'The instruction given to the agent.' }),
    config: RunConfigSchema,
    title: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String({ description: 'Title of the run.' }))
}, { additionalProperties: true });
const CreateRunResponseSchema = build/* default.Object */.Ay$.Object({ run_id: build/* default.String */.Ay$.String(), state: RunStateSchema });
const StatusMessageObjectSchema = build/* default.Object */.Ay$.Object({
    message: build/* default.String */.Ay$.String(),
    error_code: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    retryable: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean())
});
const CreatorSchema = build/* default.Object */.Ay$.Object({
    type: build/* default.String */.Ay$.String({ description: '`user` for a personal key, `agent` for an agent key.' }),
    uid: build/* default.String */.Ay$.String(),
    display_name: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String())
});
const RunRecordSchema = build/* default.Object */.Ay$.Object({
    run_id: build/* default.String */.Ay$.String(),
    state: RunStateSchema,
    title: build/* default.Optional */.Ay$.Optional(Nullable(build/* default.String */.Ay$.String())),
    prompt: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    created_at: build/* default.Optional */.Ay$.Optional(Timestamp),
    updated_at: build/* default.Optional */.Ay$.Optional(Timestamp),
    started_at: build/* default.Optional */.Ay$.Optional(Nullable(Timestamp)),
    completed_at: build/* default.Optional */.Ay$.Optional(Nullable(Timestamp)),
    status_message: build/* default.Optional */.Ay$.Optional(Nullable(build/* default.Union */.Ay$.Union([build/* default.String */.Ay$.String(), StatusMessageObjectSchema]))),
    error_code: build/* default.Optional */.Ay$.Optional(Nullable(build/* default.String */.Ay$.String({ description: 'See GET /api/v1/errors.' }))),
    session_link: build/* default.Optional */.Ay$.Optional(Nullable(build/* default.String */.Ay$.String({ format: 'uri' }))),
    creator: build/* default.Optional */.Ay$.Optional(CreatorSchema),
    agent_config: build/* default.Optional */.Ay$.Optional(RunConfigSchema),
    source: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String())
}, { additionalProperties: true });
const ListRunsResponseSchema = build/* default.Object */.Ay$.Object({
    runs: build/* default.Array */.Ay$.Array(RunRecordSchema),
    page_info: build/* default.Object */.Ay$.Object({
        has_next_page: build/* default.Boolean */.Ay$.Boolean(),
        next_cursor: build/* default.Optional */.Ay$.Optional(Nullable(build/* default.String */.Ay$.String()))
    })
});
const ProblemSchema = build/* default.Object */.Ay$.Object({
    type: build/* default.String */.Ay$.String(),
    title: build/* default.String */.Ay$.String(),
    status: build/* default.Integer */.Ay$.Integer(),
    detail: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    error_code: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    retryable: build/* default.Optional */.Ay$.Optional(build/* default.Boolean */.Ay$.Boolean()),
    instance: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String()),
    request_id: build/* default.Optional */.Ay$.Optional(build/* default.String */.Ay$.String())
}, { additionalProperties: true, description: 'RFC 7807 problem details.' });
const TranscriptEventSchema = build/* default.Object */.Ay$.Object({
    seq: build/* default.Integer */.Ay$.Integer(),
    at: Timestamp,
    kind: build/* default.String */.Ay$.String({ description: 'state, message, command, file or setup' })
}, { additionalProperties: true });
const TranscriptSchema = build/* default.Object */.Ay$.Object({
    run_id: build/* default.String */.Ay$.String(),
    state: RunStateSchema,
    events: build/* default.Array */.Ay$.Array(TranscriptEventSchema)
});

;// CONCATENATED MODULE: ./src/api/openapi.ts
// The OpenAPI 3.1 document of the contract, generated from the schemas (served by the executor at
// /api/v1/openapi.json).



const json = (schema) => ({ 'application/json': { schema } });
const problem = (description) => ({
    description,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }
});
const ref = (name) => ({ $ref: `#/components/schemas/${name}` });
const runId = { name: 'run_id', in: 'path', required: true, schema: { type: 'string' } };
const errors = {
    '401': problem('Missing, malformed, unknown or revoked API key.'),
    '429': problem('Rate limited; see Retry-After.')
};
function openApiDocument(serverUrl) {
    const create = {
        summary: 'Create a run',
        description: 'Starts an agent run asynchronously. Send Idempotency-Key to make retries safe.',
        parameters: [
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }
        ],
        requestBody: { required: true, content: json(ref('CreateRunRequest')) },
        responses: {
            '200': {
                description: 'The run was queued (or the same request was replayed).',
                content: json(ref('CreateRunResponse'))
            },
            '400': problem('Malformed body.'),
            '404': problem('Unknown environment.'),
            '413': problem('Body too large.'),
            '422': problem('Invalid field, prompt too large, or Idempotency-Key reused with another body.'),
            '503': problem('Shutting down.'),
            ...errors
        }
    };
    return {
        openapi: '3.1.0',
        info: {
            title: 'Cloud Agent Run API',
            version: '1.0.0',
            description: `Run states: ${KNOWN_STATES.join(', ')}. Error codes: ${Object.keys(ERROR_CODES).join(', ')} (GET /api/v1/errors).`
        },
        servers: serverUrl ? [{ url: serverUrl }] : [],
        security: [{ bearer: [] }],
        paths: {
            '/api/v1/agent/run': { post: { ...create, operationId: 'createRun' } },
            '/api/v1/agent/runs': {
                post: { ...create, operationId: 'createRunAlias' },
                get: {
                    operationId: 'listRuns',
                    summary: 'List runs, newest first',
                    parameters: [
                        {
                            name: 'limit',
                            in: 'query',
                            schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 }
                        },
                        { name: 'cursor', in: 'query', schema: { type: 'string' } },
                        {
                            name: 'state',
                            in: 'query',
                            schema: { type: 'array', items: { type: 'string', enum: [...KNOWN_STATES] } },
                            style: 'form',
                            explode: true
                        },
                        { name: 'environment_id', in: 'query', schema: { type: 'string' } },
                        { name: 'created_after', in: 'query', schema: { type: 'string', format: 'date-time' } },
                        { name: 'created_before', in: 'query', schema: { type: 'string', format: 'date-time' } }
                    ],
                    responses: {
                        '200': { description: 'A page of runs.', content: json(ref('ListRunsResponse')) },
                        '400': problem('Bad query parameter.'),
                        ...errors
                    }
                }
            },
            '/api/v1/agent/runs/{run_id}': {
                get: {
                    operationId: 'getRun',
                    summary: 'Read a run',
                    description: 'With If-None-Match and Prefer: wait=N (max 60), the answer is held while the run is unchanged.',
                    parameters: [
                        runId,
                        { name: 'If-None-Match', in: 'header', schema: { type: 'string' } },
                        { name: 'Prefer', in: 'header', schema: { type: 'string', examples: ['wait=30'] } }
                    ],
                    responses: {
                        '200': { description: 'The run.', content: json(ref('RunRecord')) },
                        '304': { description: 'Unchanged.' },
                        '404': problem('No such run.'),
                        ...errors
                    }
                }
            },
            '/api/v1/agent/runs/{run_id}/cancel': {
                post: {
                    operationId: 'cancelRun',
                    summary: 'Cancel a run',
                    parameters: [runId],
                    responses: {
                        '200': { description: 'The run id.', content: json({ type: 'string' }) },
                        '404': problem('No such run.'),
                        '409': problem('Already finished.'),
                        ...errors
                    }
                }
            },
            '/api/v1/agent/runs/{run_id}/transcript': {
                get: {
                    operationId: 'getTranscript',
                    summary: "A run's transcript",
                    parameters: [runId],
                    responses: {
                        '200': { description: 'Transcript events.', content: json(ref('Transcript')) },
                        '404': problem('No such run.'),
                        ...errors
                    }
                }
            }
        },
        components: {
            securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
            schemas: {
                CreateRunRequest: CreateRunRequestSchema,
                CreateRunResponse: CreateRunResponseSchema,
                RunRecord: RunRecordSchema,
                ListRunsResponse: ListRunsResponseSchema,
                Transcript: TranscriptSchema,
                Problem: ProblemSchema
            }
        }
    };
}

;// CONCATENATED MODULE: ./src/executor/server/routes/meta.ts
// Liveness, readiness, the OpenAPI document and the error reference: no key needed.


async function metaRoutes(app, { context, publicUrl }) {
    app.get('/healthz', async () => ({ status: 'ok' }));
    app.get('/readyz', async (_request, reply) => {
        if (context.draining)
            return reply.code(503).send({ status: 'shutting_down' });
        try {
            await context.store.ping();
        }
        catch {
            return reply.code(503).send({ status: 'store_unavailable' });
        }
        return { status: 'ready', environments: context.config.environments.map(env => env.id) };
    });
    let document;
    app.get('/api/v1/openapi.json', async (_request, reply) => {
        document ??= JSON.stringify(openApiDocument(publicUrl()));
        return reply.type('application/json').send(document);
    });
    app.get('/api/v1/errors', async () => ({
        errors: Object.entries(ERROR_CODES).map(([code, info]) => ({ error_code: code, ...info }))
    }));
}

;// CONCATENATED MODULE: ./src/executor/server/routes/runs.ts
// The run endpoints: create, read (with ETag and Prefer: wait), list, cancel, transcript.





const MAX_WAIT_SECONDS = 60;
async function runRoutes(app, { context }) {
    const { store, config, links, hub, limiter } = context;
    app.decorateRequest('principal', null);
    app.addHook('onRequest', async (request) => {
        request.principal = await authenticate(store, request);
        const wait = limiter.take(request.principal.keyId);
        if (wait !== undefined) {
            throw new ProblemError('rate_limited', `this key may send ${config.limits.rateLimitPerMinute} requests a minute; retry in ${wait} s`, { 'retry-after': String(wait) });
        }
    });
    const create = async (request, reply) => {
        if (context.draining)
            throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no new runs', {
                'retry-after': '5'
            });
        const body = validateCreate(request.body, config.limits.maxPromptBytes);
        let stored;
        try {
            stored = {
                config: JSON.stringify(body.config),
                extra: JSON.stringify(body.extra),
                hash: canonicalHash(request.body)
            };
        }
        catch (error) {
            if (error instanceof RangeError)
                throw new ProblemError('invalid_request', 'the body is nested too deeply');
            throw error;
        }
        if (!config.environments.some(env => env.id === body.environmentId)) {
            const known = config.environments.map(env => env.id).join(', ');
            throw new ProblemError('environment_not_found', `environment ${JSON.stringify(body.environmentId)} does not exist; this executor serves: ${known}`);
        }
        const principal = request.principal;
        const key = request.headers['idempotency-key'];
        if (key !== undefined && (typeof key !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(key))) {
            throw new ProblemError('invalid_request', 'Idempotency-Key header: expected 1–255 printable ASCII characters without spaces');
        }
        const result = await store.createRun({
            run_id: (0,external_node_crypto_.randomUUID)(),
            team: principal.team,
            environment_id: body.environmentId,
            title: body.title,
            prompt: body.prompt,
            config: stored.config,
            extra: stored.extra,
            creator_type: principal.kind === 'personal' ? 'user' : 'agent',
            creator_uid: principal.keyId,
            creator_name: principal.name,
            created_at: new Date().toISOString()
        }, key === undefined ? undefined : { key, requestHash: stored.hash }, config.limits.maxQueuedRuns);
        if (result.kind === 'key_reused') {
            throw new ProblemError('idempotency_key_reused', `Idempotency-Key ${JSON.stringify(key)} was already used with a different request body`);
        }
        if (result.kind === 'queue_full') {
            throw new ProblemError('resource_unavailable', `the queue holds ${config.limits.maxQueuedRuns} runs, its limit; retry later`, { 'retry-after': '10' });
        }
        if (result.kind === 'replayed')
            reply.header('idempotent-replayed', 'true');
        return { run_id: result.run.run_id, state: result.run.state };
    };
    app.post('/api/v1/agent/run', create);
    app.post('/api/v1/agent/runs', create);
    app.get('/api/v1/agent/runs/:id', async (request, reply) => {
        const { id } = request.params;
        let run = await findRun(request, id);
        const wait = preferWait(String(request.headers.prefer ?? ''));
        const current = () => request.headers['if-none-match'] === etagOf(run);
        if (wait !== undefined)
            reply.header('preference-applied', `wait=${wait}`);
        if (wait && current() && !isTerminalState(run.state)) {
            const closed = new AbortController();
            request.raw.once('close', () => closed.abort());
            const deadline = Date.now() + wait * 1000;
            // A wake may be a change heard twice (notification and fallback poll): wait on until this
            // run really moved, the time is up, the client left or the server is stopping.
            // Each wait also ends at once for a change heard while the run was being read (versions are
            // announced only after they are committed, so the next read sees them).
            while (!closed.signal.aborted && !context.draining && Date.now() < deadline) {
                await hub.wait(run.run_id, run.version, deadline - Date.now(), closed.signal);
                run = await findRun(request, id);
                if (!current() || isTerminalState(run.state))
                    break;
            }
        }
        reply.header('etag', etagOf(run));
        if (current())
            return reply.code(304).send();
        return toRecord(run, links);
    });
    app.get('/api/v1/agent/runs', async (request) => {
        const query = parseListQuery(request.query);
        const rows = await store.listRuns(request.principal.team, { ...query, limit: query.limit + 1 });
        const page = rows.slice(0, query.limit);
        const more = rows.length > query.limit;
        return {
            runs: page.map(run => toRecord(run, links)),
            page_info: { has_next_page: more, next_cursor: more ? encodeCursor(page.at(-1).seq) : null }
        };
    });
    app.post('/api/v1/agent/runs/:id/cancel', async (request, reply) => {
        const { id } = request.params;
        const result = await store.cancelRun(request.principal.team, id, new Date().toISOString());
        if (result.kind === 'not_found')
            throw notFound(id);
        if (result.kind === 'finished')
            throw new ProblemError('run_already_finished', `run ${id} already ended ${result.run.state}; there is nothing to cancel`);
        return reply.type('application/json').send(JSON.stringify(result.run.run_id));
    });
    app.get('/api/v1/agent/runs/:id/transcript', async (request) => {
        const { id } = request.params;
        const run = await findRun(request, id);
        return { run_id: run.run_id, state: run.state, events: await store.listEvents(run.run_id) };
    });
    async function findRun(request, id) {
        const run = await store.getRun(request.principal.team, id);
        if (!run)
            throw notFound(id);
        return run;
    }
}
function notFound(id) {
    return new ProblemError('not_found', `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`);
}
const SERVER_FIELDS = new Set([
    'run_id',
    'task_id',
    'state',
    'environment_id',
    'created_at',
    'updated_at',
    'started_at',
    'completed_at',
    'status_message',
    'error_code',
    'session_link',
    'session_id',
    'creator',
    'agent_config',
    'source',
    'run_time',
    'request_usage',
    'artifacts'
]);
function validateCreate(body, maxPromptBytes) {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw new ProblemError('invalid_request', `the body must be a JSON object with prompt and config, got ${kindOf(body)}`);
    }
    const { prompt, config, title, ...rest } = body;
    // Other fields are kept (metadata, skill, …), but never ones the server owns.
    const extra = Object.fromEntries(Object.entries(rest).filter(([name]) => !SERVER_FIELDS.has(name)));
    const field = (detail) => new ProblemError('invalid_field', detail);
    if (typeof prompt !== 'string')
        throw field(`prompt: expected a string, got ${kindOf(prompt)}`);
    if (prompt.trim() === '')
        throw field('prompt: must not be empty');
    const bytes = Buffer.byteLength(prompt);
    if (bytes > maxPromptBytes) {
        throw new ProblemError('prompt_too_large', `prompt: ${bytes} bytes is over the limit of ${maxPromptBytes} bytes`);
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config)) {
        throw field(`config: expected an object with environment_id, got ${kindOf(config)}`);
    }
    const environmentId = config.environment_id;
    if (typeof environmentId !== 'string' || environmentId.trim() === '') {
        throw field(`config.environment_id: expected a non-empty string, got ${kindOf(environmentId)}`);
    }
    if (title !== undefined && title !== null && typeof title !== 'string') {
        throw field(`title: expected a string, got ${kindOf(title)}`);
    }
    return {
        prompt,
        environmentId,
        title: typeof title === 'string' ? title : null,
        config: config,
        extra
    };
}
function kindOf(value) {
    if (value === undefined)
        return 'nothing';
    if (value === null)
        return 'null';
    if (Array.isArray(value))
        return 'an array';
    if (typeof value === 'string')
        return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
/** SHA-256 of the body with object keys sorted, so the same request always hashes the same. */
function canonicalHash(body) {
    const canonical = (value) => {
        if (Array.isArray(value))
            return value.map(canonical);
        if (value !== null && typeof value === 'object') {
            return Object.fromEntries(Object.keys(value)
                .sort()
                .map(key => [key, canonical(value[key])]));
        }
        return value;
    };
    return (0,external_node_crypto_.createHash)('sha256')
        .update(JSON.stringify(canonical(body)))
        .digest('hex');
}
/** `Prefer: wait=N` (RFC 7240), capped at 60 s; undefined when absent. */
function preferWait(header) {
    const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header ?? '');
    return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}
function encodeCursor(seq) {
    return Buffer.from(`s:${seq}`).toString('base64url');
}
function parseListQuery(query) {
    const bad = (name, value, expected) => new ProblemError('invalid_request', `${name} ${JSON.stringify(value)}: expected ${expected}`);
    const one = (name) => {
        const value = query[name];
        if (Array.isArray(value))
            throw bad(name, value, 'a single value');
        return value;
    };
    const result = { limit: 20 };
    const limit = one('limit');
    if (limit !== undefined) {
        if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
            throw bad('limit', limit, 'a whole number from 1 to 100');
        result.limit = Number(limit);
    }
    const cursor = one('cursor');
    if (cursor !== undefined && cursor !== '') {
        const match = /^s:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
        if (!match)
            throw bad('cursor', cursor, 'the next_cursor of a previous page');
        result.beforeSeq = Number(match[1]);
    }
    const states = query.state === undefined ? [] : [].concat(query.state).flatMap(s => s.split(','));
    for (const state of states) {
        if (!KNOWN_STATES.includes(state))
            throw bad('state', state, `one of ${KNOWN_STATES.join(', ')}`);
    }
    if (states.length > 0)
        result.states = states;
    const environment = one('environment_id');
    if (environment !== undefined && environment !== '')
        result.environmentId = environment;
    for (const [name, key] of [
        ['created_after', 'createdAfter'],
        ['created_before', 'createdBefore']
    ]) {
        const value = one(name);
        if (value === undefined || value === '')
            continue;
        const time = Date.parse(value);
        if (Number.isNaN(time) || !/^\d{4}-\d{2}-\d{2}/.test(value))
            throw bad(name, value, 'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z');
        result[key] = new Date(time).toISOString();
    }
    return result;
}

;// CONCATENATED MODULE: ./src/executor/server/session-page.ts
// Renders a run and its transcript as one self-contained HTML page.
function escapeHtml(value) {
    return String(value ?? '').replace(/[&<>"']/g, ch => `&#${ch.charCodeAt(0)};`);
}
function duration(from, to) {
    if (!from)
        return '';
    const ms = Date.parse(to ?? new Date().toISOString()) - Date.parse(from);
    return `${(ms / 1000).toFixed(1)} s${to ? '' : ' so far'}`;
}
function session_page_event(e) {
    const time = `<time>${escapeHtml(e.at.slice(11, 23))}</time>`;
    switch (e.kind) {
        case 'state':
            return `<li class="state">${time} state <b>${escapeHtml(e.state)}</b>${e.status_message ? `: ${escapeHtml(e.status_message)}` : ''}</li>`;
        case 'message':
            return `<li class="message">${time} agent<pre>${escapeHtml(e.text)}</pre></li>`;
        case 'command':
        case 'setup':
            return `<li class="command">${time} ${e.kind === 'setup' ? 'setup' : 'command'} <code>${escapeHtml(e.command)}</code> → exit ${escapeHtml(e.exit_code)}${e.output ? `<pre>${escapeHtml(e.output)}</pre>` : ''}</li>`;
        case 'file':
            return `<li class="file">${time} file <code>${escapeHtml(e.path)}</code> ${escapeHtml(e.change)}${e.diff ? `<pre>${escapeHtml(e.diff)}</pre>` : ''}</li>`;
        case 'diff': {
            const files = e.files ?? [];
            const list = files.map(f => `<code>${escapeHtml(f.path)}</code> ${escapeHtml(f.change)}`).join(', ');
            return `<li class="diff">${time} files changed: ${list}<pre>${escapeHtml(e.diff)}</pre></li>`;
        }
        case 'exit':
            return `<li class="exit">${time} agent exited with code ${escapeHtml(e.exit_code)}${e.signal ? ` (${escapeHtml(e.signal)})` : ''}</li>`;
        case 'output':
            return `<li class="output">${time} ${escapeHtml(e.stream ?? 'output')}<pre>${escapeHtml(e.text)}</pre></li>`;
        default:
            return `<li>${time} ${escapeHtml(e.kind)}<pre>${escapeHtml(JSON.stringify(e))}</pre></li>`;
    }
}
function renderSession(run, events) {
    const rows = [
        ['Run', `<code>${escapeHtml(run.run_id)}</code>`],
        ['State', `<b>${escapeHtml(run.state)}</b>`],
        ['Environment', escapeHtml(run.environment_id)],
        ['Created', escapeHtml(run.created_at)],
        ['Started', escapeHtml(run.started_at ?? '')],
        ['Completed', escapeHtml(run.completed_at ?? '')],
        ['Duration', escapeHtml(duration(run.started_at, run.completed_at))],
        ['Creator', `${escapeHtml(run.creator_name)} (${escapeHtml(run.creator_type)})`]
    ];
    if (run.status_message)
        rows.push(['Status message', escapeHtml(run.status_message)]);
    if (run.error_code)
        rows.push(['Error code', `<code>${escapeHtml(run.error_code)}</code>`]);
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(run.title || `Run ${run.run_id}`)}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2328}
table{border-collapse:collapse}td,th{text-align:left;padding:.2rem .8rem .2rem 0;vertical-align:top}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-word}
ol{list-style:none;padding:0}li{margin:.4rem 0}time{color:#656d76;font-family:monospace}
</style></head><body>
<h1>${escapeHtml(run.title || 'Agent run')}</h1>
<table>${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join('')}</table>
<h2>Prompt</h2><pre>${escapeHtml(run.prompt)}</pre>
<h2>Transcript</h2><ol>${events.map(session_page_event).join('\n')}</ol>
</body></html>
`;
}

;// CONCATENATED MODULE: ./src/executor/server/routes/sessions.ts
// The session page behind a run's session_link: HTML that works without JavaScript and escapes
// every piece of run content. The token (an HMAC of the run id) is the access check; a wrong or
// missing token answers 404, like a run that does not exist.


async function sessionRoutes(app, { context }) {
    app.get('/sessions/:id', async (request, reply) => {
        const { id } = request.params;
        const { token } = request.query;
        const run = context.links.verify(id, token) ? await context.store.getRunAnyTeam(id) : undefined;
        if (!run)
            throw new ProblemError('not_found', 'no session with this id and token');
        const events = await context.store.listEvents(run.run_id);
        return reply
            .type('text/html; charset=utf-8')
            .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
            .header('referrer-policy', 'no-referrer')
            .header('cache-control', 'no-store')
            .send(renderSession(run, events));
    });
}

;// CONCATENATED MODULE: ./src/executor/server/app.ts
// The executor as one process: the Fastify API and the worker pool over one store. A node's role
// picks the parts: `all` (both), `api` (the API; it runs nothing), `worker` (runs work; it serves
// only /healthz, /readyz and the API's description).











async function startExecutor(config, store, role = 'all') {
    // Request ids: unique per process start, cheap to make (no random bytes per request).
    const requestPrefix = (0,external_node_crypto_.randomBytes)(4).toString('hex');
    let requestCount = 0;
    let listening = `http://${config.host}:${config.port}`;
    const publicUrl = () => config.publicUrl ?? listening;
    const secret = await store.getSecret('session-hmac', () => (0,external_node_crypto_.randomBytes)(32).toString('base64url'));
    const context = {
        store,
        config,
        links: new SessionLinks(secret, publicUrl),
        hub: new ChangeHub(store),
        limiter: new RateLimiter(config.limits.rateLimitPerMinute),
        draining: false
    };
    const app = fastify_default()({
        logger: { level: config.logLevel, stream: process.stderr },
        disableRequestLogging: true,
        bodyLimit: config.limits.maxBodyBytes,
        forceCloseConnections: true,
        return503OnClosing: true,
        clientErrorHandler: writeClientError,
        genReqId: () => `${requestPrefix}-${(++requestCount).toString(36)}`,
        // Malformed URLs (bad percent-encoding, say) get a problem body like every other error.
        frameworkErrors: (error, _request, reply) => void reply.code(400).type('application/problem+json').send({
            type: '/api/v1/errors#invalid_request',
            title: 'Bad Request',
            status: 400,
            detail: error.message,
            error_code: 'invalid_request',
            retryable: false
        })
    });
    app.removeContentTypeParser('text/plain');
    // JSON bodies as usual, except that an empty body (a cancel with Content-Type: json) is no body.
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
        if (body === '')
            return done(null, undefined);
        parseJson(request, body, done);
    });
    app.addHook('onSend', async (request, reply) => {
        reply.header('x-request-id', String(request.id));
    });
    const logRequests = config.logLevel === 'info' || config.logLevel === 'debug';
    app.addHook('onResponse', async (request, reply) => {
        if (!logRequests)
            return;
        request.log.info({
            method: request.method,
            path: request.url.split('?')[0],
            status: reply.statusCode,
            ms: Math.round(reply.elapsedTime)
        }, 'request');
    });
    app.setErrorHandler((error, request, reply) => {
        if (error instanceof ProblemError)
            return sendProblem(reply, error);
        if (error instanceof StoreUnavailableError) {
            request.log.warn({ err: error }, 'store unavailable');
            return sendProblem(reply, new ProblemError('store_unavailable', 'the executor cannot reach its store; retry shortly', {
                'retry-after': '2'
            }));
        }
        switch (error.code) {
            case 'FST_ERR_CTP_BODY_TOO_LARGE':
                return sendProblem(reply, new ProblemError('payload_too_large', `the body is over the limit of ${config.limits.maxBodyBytes} bytes`));
            case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
                return sendProblem(reply, new ProblemError('unsupported_media_type', `Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not supported; send application/json`));
            case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
            case 'FST_ERR_CTP_EMPTY_JSON_BODY':
                return sendProblem(reply, new ProblemError('invalid_request', error.message));
        }
        if (error instanceof SyntaxError || error.statusCode === 400) {
            return sendProblem(reply, new ProblemError('invalid_request', `the body is not valid JSON: ${error.message}`));
        }
        if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
            return sendProblem(reply, new ProblemError('invalid_request', error.message, {}, error.statusCode));
        }
        request.log.error({ err: error }, 'request failed');
        return sendProblem(reply, new ProblemError('internal_error', 'the executor failed while answering; the error is in its log'));
    });
    app.setNotFoundHandler((request, reply) => sendProblem(reply, new ProblemError('route_not_found', `no endpoint ${request.method} ${request.url.split('?')[0]}`)));
    await app.register(metaRoutes, { context, publicUrl });
    if (role !== 'worker') {
        await app.register(sessionRoutes, { context });
        await app.register(runRoutes, { context });
    }
    const pool = new WorkerPool(store, config, app.log, role !== 'api');
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    if (address && typeof address === 'object') {
        const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        listening = `http://${host}:${address.port}`;
    }
    await pool.start();
    let stopping;
    return {
        app,
        pool,
        context,
        get url() {
            return listening;
        },
        stop(graceMs = config.shutdownGraceMs) {
            stopping ??= (async () => {
                context.draining = true;
                await pool.stop(graceMs);
                context.hub.close();
                await app.close();
                await store.close();
            })();
            return stopping;
        }
    };
}

// EXTERNAL MODULE: external "node:events"
var external_node_events_ = __webpack_require__(78474);
// EXTERNAL MODULE: ./node_modules/pg/esm/index.mjs
var esm = __webpack_require__(83849);
;// CONCATENATED MODULE: ./src/executor/store/migrations.ts
// Versioned schema migrations, one list per store. Each runs once, in its own transaction; the applied versions are
// recorded in schema_migrations (SQLite) or agent_executor_migrations (PostgreSQL, where the database
// may be shared with other tools' tables). Never edit a released migration: add the next one.
const SQLITE_MIGRATIONS = [
    {
        version: 1,
        name: 'keys, runs, transcript events, secrets',
        sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('personal', 'agent')),
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE TABLE runs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL UNIQUE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        state TEXT NOT NULL,
        title TEXT,
        prompt TEXT NOT NULL,
        config TEXT NOT NULL,
        extra TEXT NOT NULL,
        creator_type TEXT NOT NULL,
        creator_uid TEXT NOT NULL,
        creator_name TEXT NOT NULL,
        status_message TEXT,
        error_code TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        started_at TEXT,
        completed_at TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        lease_owner TEXT,
        lease_expires_at INTEGER,
        idempotency_key TEXT,
        idempotency_hash TEXT
      );
      CREATE INDEX runs_team_seq ON runs (team, seq);
      CREATE INDEX runs_state_seq ON runs (state, seq);
      CREATE UNIQUE INDEX runs_idempotency ON runs (team, idempotency_key) WHERE idempotency_key IS NOT NULL;
      CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    `
    }
];
/**
 * The same schema on PostgreSQL, plus what several nodes need: a per-run event counter (writers on
 * different nodes number transcript events without colliding) and changed_at on the database's
 * clock (for the fallback poll). Timestamps stay ISO-8601 text, as the API shows them. Prompt, title
 * and status message are UTF-8 bytes: PostgreSQL text cannot hold NUL, and a prompt must come back
 * exactly as sent.
 */
const POSTGRES_MIGRATIONS = [
    {
        version: 1,
        name: 'keys, runs, transcript events, secrets',
        sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('personal', 'agent')),
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE TABLE runs (
        seq BIGSERIAL PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        state TEXT NOT NULL,
        title BYTEA,
        prompt BYTEA NOT NULL,
        config TEXT NOT NULL,
        extra TEXT NOT NULL,
        creator_type TEXT NOT NULL,
        creator_uid TEXT NOT NULL,
        creator_name TEXT NOT NULL,
        status_message BYTEA,
        error_code TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        started_at TEXT,
        completed_at TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        idempotency_key TEXT,
        idempotency_hash TEXT,
        event_seq INTEGER NOT NULL DEFAULT 1,
        changed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX runs_team_seq ON runs (team, seq);
      CREATE INDEX runs_queued ON runs (seq) WHERE state = 'QUEUED';
      CREATE INDEX runs_in_progress ON runs (lease_expires_at) WHERE state = 'INPROGRESS';
      CREATE INDEX runs_changed_at ON runs (changed_at);
      CREATE UNIQUE INDEX runs_idempotency ON runs (team, idempotency_key) WHERE idempotency_key IS NOT NULL;
      CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    `
    }
];

;// CONCATENATED MODULE: ./src/executor/store/postgres.ts
// RunStore on PostgreSQL, shared by every executor node on one database. What makes several nodes
// safe together:
// - claims take the oldest QUEUED run with FOR UPDATE SKIP LOCKED, so two nodes never claim one run;
// - leases are stamped and checked with the database's clock, so nodes' clocks may disagree;
// - every change is announced with pg_notify in the transaction that makes it (sent at commit), and
//   each node LISTENs on one connection; a slow fallback poll of recently changed runs covers
//   notifications missed while that connection was down;
// - idempotency is a unique index, so concurrent creates with one key on two nodes give one run;
// - migrations run under an advisory lock, so nodes starting at once apply each exactly once.
// Connection errors become StoreUnavailableError: requests answer 503, workers pause.






const CHANNEL = 'agent_executor_runs';
/** No statement of this store takes long; one without an answer this late means the server is gone. */
const QUERY_TIMEOUT_MS = 30_000;
/** Milliseconds since the epoch on the database's clock. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
/** Any number that fits in a JavaScript number comes back as one (ids, counts, epoch ms). */
const TYPES = {
    getTypeParser(oid, format) {
        if (oid === 20 && format !== 'binary')
            return (value) => Number(value);
        // bytea columns hold user text as UTF-8 (see the migration): read back as strings.
        if (oid === 17 && format !== 'binary') {
            const parse = esm/* default.types */.Ay.types.getTypeParser(17, 'text');
            return (value) => parse(value).toString('utf8');
        }
        return esm/* default.types */.Ay.types.getTypeParser(oid, format);
    }
};
/** Columns of a run as the API and the worker see them (not the store's own bookkeeping). */
const RUN_COLUMNS = `seq, run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
  creator_uid, creator_name, status_message, error_code, created_at, updated_at, started_at, completed_at,
  version, lease_owner, lease_expires_at`;
const RUN_COLUMNS_OF = (alias) => RUN_COLUMNS.split(',')
    .map(column => `${alias}.${column.trim()}`)
    .join(', ');
/** Connection-level failures: the database is down, restarting, or unreachable. */
function isUnavailable(error) {
    const e = error;
    if (!e)
        return false;
    if (typeof e.code === 'string') {
        // 08 (but 08P01, a protocol violation: a bug, not an outage): connection exception;
        // 57P01-57P03: admin shutdown, crash shutdown, cannot connect now; 57014: statement timeout;
        // 53300: too many connections; 25006: read-only (a primary demoted by a failover).
        if (e.code !== '08P01' && /^08|^57P0[1-3]$|^57014$|^53300$|^25006$/.test(e.code))
            return true;
        const network = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'];
        if ([...network, 'ENOTFOUND', 'EAI_AGAIN'].includes(e.code))
            return true;
    }
    // pg's own: a connection lost or never made, every pooled connection busy past the wait, a
    // query with no answer in time.
    return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|not queryable/i.test(e.message ?? '');
}
class PostgresRunStore {
    pool;
    url;
    options;
    kind = 'postgres';
    shared = true;
    /** This process's name in notifications, so it skips its own (it already told its listeners). */
    node = (0,external_node_crypto_.randomUUID)();
    changes = new external_node_events_.EventEmitter();
    listener;
    listening = false;
    closed = false;
    pollTimer;
    reconnectTimer;
    /** Database time of the last successful fallback poll. */
    polledUpTo;
    /** run_id → the newest version this process has announced, to skip the poll's repeats. */
    heard = new Map();
    constructor(pool, url, options) {
        this.pool = pool;
        this.url = url;
        this.options = options;
        this.changes.setMaxListeners(0);
    }
    /** Connects, and brings the schema up to date under an advisory lock. */
    static async open(url, options = {}) {
        const pool = new esm/* default.Pool */.Ay.Pool({
            connectionString: url,
            max: options.poolSize ?? 10,
            connectionTimeoutMillis: 5000,
            // A silent network partition must end in an error (then 503), not a request that hangs.
            keepAlive: true,
            query_timeout: QUERY_TIMEOUT_MS,
            idleTimeoutMillis: 30_000,
            types: TYPES,
            application_name: 'agent-executor'
        });
        // An idle connection that breaks (the server restarting) must not crash the process.
        pool.on('error', () => undefined);
        const store = new PostgresRunStore(pool, url, {
            poolSize: options.poolSize ?? 10,
            fallbackPollMs: options.fallbackPollMs ?? 2000
        });
        try {
            await store.migrate();
        }
        catch (error) {
            await pool.end().catch(() => undefined);
            throw new Error(`cannot open the PostgreSQL store at ${redactUrl(url)}: ${error.message}`, {
                cause: error
            });
        }
        return store;
    }
    /**
     * Applies the migrations this database lacks, all in one transaction. A database that has them
     * all is only read, so a role without the right to create tables can open a migrated database.
     */
    async migrate() {
        await this.transaction(async (client) => {
            // One lock for every node of every version: the second node waits, then finds nothing to do.
            await client.query(`SELECT pg_advisory_xact_lock(hashtext('agent-executor schema'))`);
            const exists = await client.query(`SELECT to_regclass('agent_executor_migrations')::text AS table`);
            if (exists.rows[0].table === null) {
                await client.query('CREATE TABLE agent_executor_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)');
            }
            const applied = await client.query('SELECT version FROM agent_executor_migrations');
            const done = new Set(applied.rows.map(row => row.version));
            for (const migration of POSTGRES_MIGRATIONS) {
                if (done.has(migration.version))
                    continue;
                await client.query(migration.sql);
                await client.query('INSERT INTO agent_executor_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, new Date().toISOString()]);
            }
        });
    }
    /** Runs a query, turning connection failures into StoreUnavailableError. */
    async query(text, values, on = this.pool) {
        try {
            return await on.query(named(text, values));
        }
        catch (error) {
            throw this.wrap(error);
        }
    }
    wrap(error) {
        if (error instanceof StoreUnavailableError || !isUnavailable(error))
            return error;
        // The message says nothing of the address or the driver: it can reach a run's status message.
        // The cause (in the log) has the details.
        return new StoreUnavailableError('the PostgreSQL store is unavailable', { cause: error });
    }
    async transaction(work) {
        let client;
        try {
            client = await this.pool.connect();
        }
        catch (error) {
            throw this.wrap(error);
        }
        let broken = false;
        // A connection that dies between two statements reports it as an event: without a listener
        // that would end the process. The next statement fails with the same error and is handled.
        const onError = () => (broken = true);
        client.on('error', onError);
        try {
            await client.query('BEGIN');
            const result = await work({
                query: (text, values) => client.query(named(text, values))
            });
            await client.query('COMMIT');
            return result;
        }
        catch (error) {
            broken = isUnavailable(error);
            if (!broken)
                await client.query('ROLLBACK').catch(() => (broken = true));
            throw this.wrap(error);
        }
        finally {
            client.off('error', onError);
            client.release(broken);
        }
    }
    /** Tells this process's listeners now; other nodes hear the pg_notify sent at commit. */
    announce(runs) {
        for (const run of runs)
            this.tell(run);
    }
    /** Tells the listeners of a change, unless this process already told them of that version. */
    tell(run) {
        if (!this.remember(run))
            return;
        try {
            this.changes.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
        }
        catch {
            // a listener failed; the change is stored, and timers catch up
        }
    }
    remember(run) {
        const seen = this.heard.get(run.run_id);
        if (seen && seen.version >= run.version)
            return false;
        this.heard.set(run.run_id, { version: run.version, at: Date.now() });
        return true;
    }
    /** Inside a transaction: a state event for each run, and one notification for all of them. */
    async recordStates(client, runs) {
        if (runs.length === 0)
            return;
        const data = runs.map(run => {
            const event = { state: run.state };
            if (run.status_message !== null && run.state !== 'QUEUED' && run.state !== 'INPROGRESS')
                event.status_message = run.status_message;
            if (run.error_code !== null)
                event.error_code = run.error_code;
            return JSON.stringify(event);
        });
        await client.query(`INSERT INTO events (run_id, seq, at, kind, data)
       SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[])`, [
            runs.map(run => run.run_id),
            runs.map(run => run.event_seq),
            runs.map(run => run.updated_at),
            runs.map(() => 'state'),
            data
        ]);
        await client.query(`SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload`, [
            CHANNEL,
            runs.map(run => JSON.stringify({ n: this.node, r: run.run_id, s: run.state, v: run.version }))
        ]);
    }
    async createKey(key) {
        await this.query(`INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [key.id, key.team, key.kind, key.name, key.hash, key.hint, key.created_at, key.revoked_at]);
    }
    async findKeyByHash(hash) {
        return (await this.query('SELECT * FROM api_keys WHERE hash = $1', [hash])).rows[0];
    }
    async listKeys() {
        return (await this.query('SELECT * FROM api_keys ORDER BY created_at, id')).rows;
    }
    async revokeKey(id, at) {
        const result = await this.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [at, id]);
        return (result.rowCount ?? 0) > 0;
    }
    /**
     * One statement, so one round trip and one commit: the queue count, the insert (which the unique
     * index settles against concurrent creates with the same key), the state event and the
     * notification. A look for an earlier run with the key comes first, so a replay is answered
     * even when the queue is full.
     */
    async createRun(run, idempotency, maxQueued) {
        const pool = { query: (text, values) => this.query(text, values) };
        if (idempotency) {
            const replay = await this.replay(pool, run.team, idempotency);
            if (replay)
                return replay;
        }
        // Counting stops at the limit, so a long queue does not make every create slower. Nodes
        // count at once, so the limit can be passed by the number of creates in flight.
        const inserted = await this.query(`WITH queued AS (SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT $14) AS q),
       created AS (
         INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
           creator_uid, creator_name, created_at, updated_at, idempotency_key, idempotency_hash)
         SELECT $1::text, $2::text, $3::text, 'QUEUED', $4::bytea, $5::bytea, $6::text, $7::text, $8::text,
           $9::text, $10::text, $11::text, $11::text, $12::text, $13::text
         WHERE (SELECT n FROM queued) < $14
         ON CONFLICT (team, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING ${RUN_COLUMNS}, event_seq),
       event AS (
         INSERT INTO events (run_id, seq, at, kind, data)
         SELECT run_id, event_seq, updated_at, 'state', '{"state":"QUEUED"}' FROM created)
       SELECT created.*, pg_notify($15, json_build_object('n', $16::text, 'r', run_id, 's', state, 'v', version)::text)
       FROM created`, [
            run.run_id,
            run.team,
            run.environment_id,
            bytes(run.title),
            bytes(run.prompt),
            run.config,
            run.extra,
            run.creator_type,
            run.creator_uid,
            run.creator_name,
            run.created_at,
            idempotency?.key ?? null,
            idempotency?.requestHash ?? null,
            maxQueued,
            CHANNEL,
            this.node
        ]);
        const created = inserted.rows[0];
        if (!created) {
            // Nothing inserted: another node created a run with this key after our look (the unique
            // index decided), or the queue is full.
            const replay = idempotency && (await this.replay(pool, run.team, idempotency));
            return replay || { kind: 'queue_full' };
        }
        delete created.pg_notify;
        const result = { kind: 'created', run: strip(created) };
        this.announce([result.run]);
        return result;
    }
    async replay(client, team, idempotency) {
        const existing = await client.query(`SELECT ${RUN_COLUMNS}, idempotency_hash FROM runs WHERE team = $1 AND idempotency_key = $2`, [team, idempotency.key]);
        const row = existing.rows[0];
        if (!row)
            return undefined;
        return row.idempotency_hash === idempotency.requestHash
            ? { kind: 'replayed', run: strip(row) }
            : { kind: 'key_reused' };
    }
    async getRun(team, runId) {
        return (await this.query(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1 AND team = $2`, [
            runId,
            team
        ])).rows[0];
    }
    async getRunAnyTeam(runId) {
        return (await this.query(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1`, [runId]))
            .rows[0];
    }
    async listRuns(team, query) {
        const values = [team];
        const where = ['team = $1'];
        const add = (condition, value) => {
            values.push(value);
            where.push(condition(`$${values.length}`));
        };
        if (query.beforeSeq !== undefined)
            add(p => `seq < ${p}`, query.beforeSeq);
        if (query.states && query.states.length > 0)
            add(p => `state = ANY(${p}::text[])`, query.states);
        if (query.environmentId !== undefined)
            add(p => `environment_id = ${p}`, query.environmentId);
        if (query.createdAfter !== undefined)
            add(p => `created_at > ${p}`, query.createdAfter);
        if (query.createdBefore !== undefined)
            add(p => `created_at < ${p}`, query.createdBefore);
        values.push(query.limit);
        return (await this.query(`SELECT ${RUN_COLUMNS} FROM runs WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${values.length}`, values)).rows;
    }
    async cancelRun(team, runId, at) {
        const result = await this.transaction(async (client) => {
            const found = await client.query(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1 AND team = $2 FOR UPDATE`, [runId, team]);
            const run = found.rows[0];
            if (!run)
                return { kind: 'not_found' };
            if (['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(run.state))
                return { kind: 'finished', run };
            const updated = await client.query(`UPDATE runs SET state = 'CANCELLED', status_message = convert_to('cancelled by a client', 'UTF8'),
           error_code = 'cancelled',
           completed_at = $1, updated_at = $1, version = version + 1, lease_owner = NULL,
           lease_expires_at = NULL, event_seq = event_seq + 1, changed_at = clock_timestamp()
         WHERE run_id = $2 RETURNING ${RUN_COLUMNS}, event_seq`, [at, runId]);
            await this.recordStates(client, updated.rows);
            return { kind: 'cancelled', run: strip(updated.rows[0]) };
        });
        if (result.kind === 'cancelled')
            this.announce([result.run]);
        return result;
    }
    async claimNext(owner, leaseMs, excluded, at) {
        const run = await this.transaction(async (client) => {
            const claimed = await client.query(`WITH next AS (
           SELECT seq FROM runs WHERE state = 'QUEUED' AND NOT (environment_id = ANY($4::text[]))
           ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         UPDATE runs AS r SET state = 'INPROGRESS', started_at = $1, updated_at = $1, version = r.version + 1,
           lease_owner = $2, lease_expires_at = ${NOW_MS} + $3, event_seq = r.event_seq + 1,
           changed_at = clock_timestamp()
         FROM next WHERE r.seq = next.seq
         RETURNING ${RUN_COLUMNS_OF('r')}, r.event_seq`, [at, owner, leaseMs, excluded]);
            await this.recordStates(client, claimed.rows);
            return claimed.rows[0] && strip(claimed.rows[0]);
        });
        if (run)
            this.announce([run]);
        return run;
    }
    async findClaim(owner) {
        return (await this.query(`SELECT ${RUN_COLUMNS} FROM runs WHERE state = 'INPROGRESS' AND lease_owner = $1`, [owner])).rows[0];
    }
    async renewLease(runId, owner, leaseMs) {
        const result = await this.query(`UPDATE runs SET lease_expires_at = ${NOW_MS} + $3
       WHERE run_id = $1 AND lease_owner = $2 AND state = 'INPROGRESS'`, [runId, owner, leaseMs]);
        return (result.rowCount ?? 0) > 0;
    }
    async finishRun(runId, owner, outcome, at) {
        const run = await this.transaction(async (client) => {
            const finished = await client.query(`UPDATE runs SET state = $1, status_message = $2, error_code = $3, completed_at = $4, updated_at = $4,
           version = version + 1, lease_owner = NULL, lease_expires_at = NULL, event_seq = event_seq + 1,
           changed_at = clock_timestamp()
         WHERE run_id = $5 AND lease_owner = $6 AND state = 'INPROGRESS'
         RETURNING ${RUN_COLUMNS}, event_seq`, [outcome.state, bytes(outcome.status_message ?? null), outcome.error_code ?? null, at, runId, owner]);
            await this.recordStates(client, finished.rows);
            return finished.rows[0] && strip(finished.rows[0]);
        });
        if (run)
            this.announce([run]);
        return run;
    }
    async failAbandoned(all, at, message) {
        // Every node sweeps every second or so; almost always there is nothing to sweep, and one
        // indexed look costs one round trip instead of a transaction's four.
        if (!all) {
            const expired = await this.query(`SELECT 1 FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < ${NOW_MS} LIMIT 1`, []);
            if (expired.rowCount === 0)
                return [];
        }
        const runs = await this.transaction(async (client) => {
            // SKIP LOCKED: a run its worker is finishing right now is not abandoned, and two nodes
            // sweeping at once do not wait on each other.
            const failed = await client.query(`UPDATE runs SET state = 'FAILED', status_message = $1, error_code = 'executor_restarted',
           completed_at = $2, updated_at = $2, version = version + 1, lease_owner = NULL,
           lease_expires_at = NULL, event_seq = event_seq + 1, changed_at = clock_timestamp()
         WHERE seq IN (SELECT seq FROM runs WHERE state = 'INPROGRESS' AND ($3 OR lease_expires_at < ${NOW_MS})
                       FOR UPDATE SKIP LOCKED)
         RETURNING ${RUN_COLUMNS}, event_seq`, [bytes(message), at, all]);
            await this.recordStates(client, failed.rows);
            return failed.rows.map(strip);
        });
        this.announce(runs);
        return runs;
    }
    async appendEvent(runId, kind, data, at) {
        // The run's row hands out event numbers, so writers on different nodes never collide.
        const result = await this.query(`WITH next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE run_id = $1 RETURNING event_seq)
       INSERT INTO events (run_id, seq, at, kind, data) SELECT $1, event_seq, $2, $3, $4 FROM next
       RETURNING seq`, [runId, at, kind, JSON.stringify(data)]);
        const seq = result.rows[0]?.seq;
        if (seq === undefined)
            throw new Error(`run ${runId} does not exist`);
        return { ...data, seq, at, kind };
    }
    async listEvents(runId) {
        const result = await this.query('SELECT seq, at, kind, data FROM events WHERE run_id = $1 ORDER BY seq', [runId]);
        return result.rows.map(row => ({
            ...JSON.parse(row.data),
            seq: row.seq,
            at: row.at,
            kind: row.kind
        }));
    }
    async pruneFinished(before) {
        return this.transaction(async (client) => {
            const filter = `state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED') AND completed_at < $1`;
            await client.query(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`, [
                before
            ]);
            return (await client.query(`DELETE FROM runs WHERE ${filter}`, [before])).rowCount ?? 0;
        });
    }
    async getSecret(name, create) {
        // The first node to ask makes it; every other node reads the same one.
        await this.query('INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
            name,
            create()
        ]);
        const row = await this.query('SELECT value FROM secrets WHERE name = $1', [name]);
        return row.rows[0].value;
    }
    async ping() {
        await this.query('SELECT 1');
    }
    onChange(listener) {
        this.changes.on('change', listener);
        this.startListening();
        return () => this.changes.off('change', listener);
    }
    /** Other nodes' changes: LISTEN on a connection of its own, reconnecting with backoff. */
    startListening() {
        if (this.listening)
            return;
        this.listening = true;
        void this.connectListener(100);
        this.pollTimer = setInterval(() => void this.poll(), this.options.fallbackPollMs);
        this.pollTimer.unref();
    }
    async connectListener(delayMs) {
        if (this.closed)
            return;
        const client = new esm/* default.Client */.Ay.Client({
            connectionString: this.url,
            types: TYPES,
            keepAlive: true,
            connectionTimeoutMillis: 5000
        });
        client.on('notification', message => this.onNotification(message.payload));
        let retried = false;
        const retry = () => {
            if (retried || this.closed)
                return;
            retried = true;
            if (this.listener === client)
                this.listener = undefined;
            client.end().catch(() => undefined);
            this.reconnectTimer = setTimeout(() => void this.connectListener(Math.min(delayMs * 2, 2000)), delayMs);
            this.reconnectTimer.unref();
        };
        client.on('error', retry);
        client.on('end', retry);
        try {
            await client.connect();
            await client.query(`LISTEN ${CHANNEL}`);
            if (this.closed) {
                await client.end();
                return;
            }
            this.listener = client;
            // Whatever changed while no one listened is found by the next poll (it starts where the last
            // successful one ended); run it now rather than wait for the timer.
            void this.poll();
        }
        catch {
            retry();
        }
    }
    onNotification(payload) {
        if (!payload)
            return;
        let message;
        try {
            message = JSON.parse(payload);
        }
        catch {
            return;
        }
        if (message.n === this.node)
            return;
        this.tell({ run_id: message.r, state: message.s, version: message.v });
    }
    polling = false;
    /**
     * The fallback: runs changed since the last poll (on the database's clock, with a margin for
     * transactions that committed late), announced unless this process already heard that version.
     */
    async poll() {
        if (this.polling || this.closed)
            return;
        this.polling = true;
        try {
            const result = await this.pool.query(`SELECT run_id, state, version, NULL AS now FROM runs
         WHERE $1::timestamptz IS NOT NULL AND changed_at > $1::timestamptz - interval '5 seconds'
         UNION ALL SELECT NULL, NULL, NULL, clock_timestamp()::text`, [this.polledUpTo ?? null]);
            const rows = result.rows;
            this.polledUpTo = rows.find(row => row.run_id === null).now;
            for (const row of rows)
                if (row.run_id !== null)
                    this.tell(row);
            const forget = Date.now() - 60_000;
            for (const [runId, seen] of this.heard)
                if (seen.at < forget)
                    this.heard.delete(runId);
        }
        catch {
            // unreachable: the next poll starts where the last good one ended
        }
        finally {
            this.polling = false;
        }
    }
    async close() {
        if (this.closed)
            return;
        this.closed = true;
        clearInterval(this.pollTimer);
        clearTimeout(this.reconnectTimer);
        await this.listener?.end().catch(() => undefined);
        await this.pool.end();
    }
}
const names = new Map();
/**
 * A named query: each connection parses and plans it once, then only binds and runs it (the hot
 * reads spend less time in the server than without a name).
 */
function named(text, values) {
    // Without values, the simple protocol: it alone runs several statements (the migrations).
    if (values === undefined)
        return { text };
    let name = names.get(text);
    if (!name)
        names.set(text, (name = `q${names.size + 1}`));
    return { name, text, values };
}
/** User text as UTF-8 bytes, for the bytea columns. */
function bytes(text) {
    return text === null ? null : Buffer.from(text, 'utf8');
}
/** The run without the store's bookkeeping columns. */
function strip(row) {
    const { event_seq: _seq, idempotency_hash: _hash, ...run } = row;
    return run;
}

;// CONCATENATED MODULE: ./src/executor/store/sqlite.ts
// RunStore on node:sqlite: WAL with synchronous=FULL, so a run id that was answered survives a
// power cut. node:sqlite is synchronous and JavaScript runs one thing at a time, so each method is
// atomic in this process; BEGIN IMMEDIATE makes it atomic against other processes too (the CLI's
// `keys` commands write while a server runs).




const TERMINAL = `('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED')`;
class SqliteRunStore {
    db;
    kind = 'sqlite';
    shared = false;
    changes = new external_node_events_.EventEmitter();
    statements = new Map();
    constructor(db) {
        this.db = db;
        this.changes.setMaxListeners(0);
    }
    /** Opens (creating when needed) the database file and brings its schema up to date. */
    static async open(path) {
        const { DatabaseSync } = await Promise.resolve(/* import() */).then(__webpack_require__.t.bind(__webpack_require__, 80099, 23));
        if (path !== ':memory:')
            (0,external_node_fs_.mkdirSync)((0,external_node_path_.dirname)(path), { recursive: true });
        const db = new DatabaseSync(path);
        db.exec('PRAGMA busy_timeout = 10000');
        db.exec('PRAGMA journal_mode = WAL');
        db.exec('PRAGMA synchronous = FULL');
        db.exec('PRAGMA foreign_keys = ON');
        const store = new SqliteRunStore(db);
        store.migrate();
        return store;
    }
    migrate() {
        this.db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)');
        for (const migration of SQLITE_MIGRATIONS) {
            this.transaction(() => {
                const done = this.db
                    .prepare('SELECT 1 FROM schema_migrations WHERE version = ?')
                    .get(migration.version);
                if (done)
                    return;
                this.db.exec(migration.sql);
                this.db
                    .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
                    .run(migration.version, migration.name, new Date().toISOString());
            });
        }
    }
    sql(text) {
        let statement = this.statements.get(text);
        if (!statement) {
            statement = this.db.prepare(text);
            this.statements.set(text, statement);
        }
        return statement;
    }
    transaction(work) {
        this.db.exec('BEGIN IMMEDIATE');
        try {
            const result = work();
            this.db.exec('COMMIT');
            return result;
        }
        catch (error) {
            this.db.exec('ROLLBACK');
            throw error;
        }
    }
    emit(run) {
        if (run)
            this.changes.emit('change', { run_id: run.run_id, state: run.state, version: run.version });
        return run;
    }
    /** Every state change is recorded in the transcript in the same transaction as the change. */
    recordState(run) {
        if (!run)
            return run;
        const data = { state: run.state };
        if (run.status_message !== null && run.state !== 'QUEUED' && run.state !== 'INPROGRESS')
            data.status_message = run.status_message;
        if (run.error_code !== null)
            data.error_code = run.error_code;
        this.insertEvent(run.run_id, 'state', data, run.updated_at);
        return run;
    }
    insertEvent(runId, kind, data, at) {
        const row = this.sql(`INSERT INTO events (run_id, seq, at, kind, data)
       VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?), ?, ?, ?)
       RETURNING seq`).get(runId, runId, at, kind, JSON.stringify(data));
        return row.seq;
    }
    async createKey(key) {
        this.sql(`INSERT INTO api_keys (id, team, kind, name, hash, hint, created_at, revoked_at)
       VALUES (:id, :team, :kind, :name, :hash, :hint, :created_at, :revoked_at)`).run(key);
    }
    async findKeyByHash(hash) {
        return this.sql('SELECT * FROM api_keys WHERE hash = ?').get(hash);
    }
    async listKeys() {
        return this.sql('SELECT * FROM api_keys ORDER BY created_at, id').all();
    }
    async revokeKey(id, at) {
        const result = this.sql('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, id);
        return Number(result.changes) > 0;
    }
    /**
     * Creates are group-committed: those that arrive in one turn of the event loop share one
     * transaction and one fsync, and each is answered only after that commit, so an acknowledged run
     * is as durable as before.
     */
    createRun(run, idempotency, maxQueued) {
        return new Promise((resolve, reject) => {
            this.pendingCreates.push({ run, idempotency, maxQueued, resolve, reject });
            if (this.pendingCreates.length === 1)
                setImmediate(() => this.flushCreates());
        });
    }
    pendingCreates = [];
    flushCreates() {
        const batch = this.pendingCreates;
        this.pendingCreates = [];
        const results = [];
        try {
            this.transaction(() => {
                for (const item of batch) {
                    this.db.exec('SAVEPOINT one_create');
                    try {
                        results.push(this.createOne(item.run, item.idempotency, item.maxQueued));
                        this.db.exec('RELEASE one_create');
                    }
                    catch (error) {
                        this.db.exec('ROLLBACK TO one_create');
                        this.db.exec('RELEASE one_create');
                        results.push({ error });
                    }
                }
            });
        }
        catch (error) {
            for (const item of batch)
                item.reject(error);
            return;
        }
        // Answer every request first; a listener that throws must not leave one unanswered.
        batch.forEach((item, index) => {
            const result = results[index];
            if ('error' in result)
                item.reject(result.error);
            else
                item.resolve(result);
        });
        for (const result of results) {
            if ('kind' in result && result.kind === 'created') {
                try {
                    this.emit(result.run);
                }
                catch {
                    // a change listener failed; the run is stored and the worker's timer will claim it
                }
            }
        }
    }
    createOne(run, idempotency, maxQueued) {
        if (idempotency) {
            const existing = this.sql('SELECT * FROM runs WHERE team = ? AND idempotency_key = ?').get(run.team, idempotency.key);
            if (existing) {
                return existing.idempotency_hash === idempotency.requestHash
                    ? { kind: 'replayed', run: existing }
                    : { kind: 'key_reused' };
            }
        }
        // Counting stops at the limit, so a long queue does not make every create slower.
        const queued = this.sql(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT ?)`).get(maxQueued);
        if (queued.n >= maxQueued)
            return { kind: 'queue_full' };
        const inserted = this.sql(`INSERT INTO runs (run_id, team, environment_id, state, title, prompt, config, extra, creator_type,
         creator_uid, creator_name, created_at, updated_at, idempotency_key, idempotency_hash)
       VALUES (:run_id, :team, :environment_id, 'QUEUED', :title, :prompt, :config, :extra, :creator_type,
         :creator_uid, :creator_name, :created_at, :created_at, :idempotency_key, :idempotency_hash)
       RETURNING *`).get({
            ...run,
            idempotency_key: idempotency?.key ?? null,
            idempotency_hash: idempotency?.requestHash ?? null
        });
        this.recordState(inserted);
        return { kind: 'created', run: inserted };
    }
    async getRun(team, runId) {
        return this.sql('SELECT * FROM runs WHERE run_id = ? AND team = ?').get(runId, team);
    }
    async getRunAnyTeam(runId) {
        return this.sql('SELECT * FROM runs WHERE run_id = ?').get(runId);
    }
    async listRuns(team, query) {
        const where = ['team = ?'];
        const params = [team];
        if (query.beforeSeq !== undefined) {
            where.push('seq < ?');
            params.push(query.beforeSeq);
        }
        if (query.states && query.states.length > 0) {
            where.push(`state IN (${query.states.map(() => '?').join(', ')})`);
            params.push(...query.states);
        }
        if (query.environmentId !== undefined) {
            where.push('environment_id = ?');
            params.push(query.environmentId);
        }
        if (query.createdAfter !== undefined) {
            where.push('created_at > ?');
            params.push(query.createdAfter);
        }
        if (query.createdBefore !== undefined) {
            where.push('created_at < ?');
            params.push(query.createdBefore);
        }
        params.push(query.limit);
        const text = `SELECT * FROM runs WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`;
        return this.sql(text).all(...params);
    }
    async cancelRun(team, runId, at) {
        const result = this.transaction(() => {
            const run = this.sql('SELECT * FROM runs WHERE run_id = ? AND team = ?').get(runId, team);
            if (!run)
                return { kind: 'not_found' };
            if (['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(run.state))
                return { kind: 'finished', run };
            const updated = this.sql(`UPDATE runs SET state = 'CANCELLED', status_message = 'cancelled by a client', error_code = 'cancelled',
           completed_at = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_expires_at = NULL
         WHERE run_id = ? RETURNING *`).get(at, at, runId);
            this.recordState(updated);
            return { kind: 'cancelled', run: updated };
        });
        if (result.kind === 'cancelled')
            this.emit(result.run);
        return result;
    }
    async claimNext(owner, leaseMs, excluded, at) {
        const skip = excluded.length > 0 ? `AND environment_id NOT IN (${excluded.map(() => '?').join(', ')})` : '';
        const run = this.transaction(() => this.recordState(this.sql(`UPDATE runs SET state = 'INPROGRESS', started_at = ?, updated_at = ?, version = version + 1,
             lease_owner = ?, lease_expires_at = ?
           WHERE seq = (SELECT seq FROM runs WHERE state = 'QUEUED' ${skip} ORDER BY seq LIMIT 1)
           RETURNING *`).get(at, at, owner, Date.now() + leaseMs, ...excluded)));
        return this.emit(run);
    }
    async findClaim(owner) {
        return this.sql(`SELECT * FROM runs WHERE state = 'INPROGRESS' AND lease_owner = ?`).get(owner);
    }
    async renewLease(runId, owner, leaseMs) {
        const result = this.sql(`UPDATE runs SET lease_expires_at = ? WHERE run_id = ? AND lease_owner = ? AND state = 'INPROGRESS'`).run(Date.now() + leaseMs, runId, owner);
        return Number(result.changes) > 0;
    }
    async finishRun(runId, owner, outcome, at) {
        const run = this.transaction(() => this.recordState(this.sql(`UPDATE runs SET state = ?, status_message = ?, error_code = ?, completed_at = ?, updated_at = ?,
             version = version + 1, lease_owner = NULL, lease_expires_at = NULL
           WHERE run_id = ? AND lease_owner = ? AND state = 'INPROGRESS'
           RETURNING *`).get(outcome.state, outcome.status_message ?? null, outcome.error_code ?? null, at, at, runId, owner)));
        return this.emit(run);
    }
    async failAbandoned(all, at, message) {
        const runs = this.transaction(() => this.sql(`UPDATE runs SET state = 'FAILED', status_message = ?, error_code = 'executor_restarted',
             completed_at = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_expires_at = NULL
           WHERE state = 'INPROGRESS' AND (? OR lease_expires_at < ?)
           RETURNING *`)
            .all(message, at, at, all ? 1 : 0, Date.now())
            .map(row => this.recordState(row)));
        for (const run of runs)
            this.emit(run);
        return runs;
    }
    async appendEvent(runId, kind, data, at) {
        return { ...data, seq: this.insertEvent(runId, kind, data, at), at, kind };
    }
    async listEvents(runId) {
        const rows = this.sql('SELECT seq, at, kind, data FROM events WHERE run_id = ? ORDER BY seq').all(runId);
        return rows.map(row => ({
            ...JSON.parse(row.data),
            seq: row.seq,
            at: row.at,
            kind: row.kind
        }));
    }
    async pruneFinished(before) {
        return this.transaction(() => {
            const filter = `state IN ${TERMINAL} AND completed_at < ?`;
            this.sql(`DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE ${filter})`).run(before);
            return Number(this.sql(`DELETE FROM runs WHERE ${filter}`).run(before).changes);
        });
    }
    async getSecret(name, create) {
        return this.transaction(() => {
            const row = this.sql('SELECT value FROM secrets WHERE name = ?').get(name);
            if (row)
                return row.value;
            const value = create();
            this.sql('INSERT INTO secrets (name, value) VALUES (?, ?)').run(name, value);
            return value;
        });
    }
    async ping() {
        this.sql('SELECT 1').get();
    }
    onChange(listener) {
        this.changes.on('change', listener);
        return () => this.changes.off('change', listener);
    }
    async close() {
        this.statements.clear();
        if (this.db.isOpen)
            this.db.close();
    }
}

;// CONCATENATED MODULE: ./src/executor/store/open.ts
// Opens the store a spec names.


async function openStore(spec, options = {}) {
    return spec.kind === 'sqlite' ? SqliteRunStore.open(spec.path) : PostgresRunStore.open(spec.url, options);
}

;// CONCATENATED MODULE: ./src/executor/cli.ts
// agent-executor: serve, keys, environments.








const USAGE = `Usage: agent-executor <command> [options]

Commands:
  serve [--host HOST] [--port PORT] [--role all|api|worker]
      Serve the run API and run agents. Defaults: 127.0.0.1, port 8080, data dir .agent-executor,
      config agent-executor.yaml when present. --port 0 picks a free port. Prints
      "listening on http://HOST:PORT" when ready. --role api serves the API and runs nothing;
      --role worker runs work and serves only /healthz and /readyz (both need a postgres:// store).
  keys create --kind personal|agent --name NAME [--team TEAM]
      Create an API key (team "default" unless given). The raw key is printed once, alone on the
      last line of stdout.
  keys list
      List keys (id, team, kind, name, first characters, created, revoked). Never shows raw keys.
  keys revoke ID
      Revoke a key at once.
  environments list
      List the configured environments.

Every command takes --config FILE, --data-dir DIR and --store STORE. STORE is a path or
sqlite:PATH (SQLite; default DATA_DIR/executor.db) or postgres://USER:PASSWORD@HOST:PORT/DB (shared by
several nodes); AGENT_EXECUTOR_STORE sets it too, and the config file's store: key.`;
class UsageError extends Error {
}
const COMMON = {
    config: { type: 'string' },
    'data-dir': { type: 'string' },
    store: { type: 'string' },
    help: { type: 'boolean', short: 'h' }
};
async function main(argv) {
    const [command, ...rest] = argv;
    try {
        switch (command) {
            case 'serve':
                return await serve(rest);
            case 'keys':
                return await keys(rest);
            case 'environments':
                return environments(rest);
            case undefined:
            case 'help':
            case '--help':
            case '-h':
                console.log(USAGE);
                return command === undefined ? 2 : 0;
            default:
                throw new UsageError(`unknown command ${JSON.stringify(command)}; expected serve, keys or environments`);
        }
    }
    catch (error) {
        if (error instanceof UsageError || error instanceof ConfigError) {
            console.error(`agent-executor: ${error.message}`);
            if (error instanceof UsageError)
                console.error('Run `agent-executor help` for usage.');
            return 2;
        }
        console.error(`agent-executor: ${error.message}`);
        return 1;
    }
}
function parse(args, options, positionals = 0) {
    try {
        const parsed = (0,external_node_util_.parseArgs)({
            args,
            options: { ...COMMON, ...options },
            allowPositionals: positionals > 0,
            strict: true
        });
        if (parsed.positionals.length > positionals)
            throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
        return parsed;
    }
    catch (error) {
        if (error instanceof UsageError)
            throw error;
        throw new UsageError(error.message.replace(/\. To specify a positional.*$/s, ''));
    }
}
function configFrom(values) {
    let port;
    if (values.port !== undefined) {
        port = Number(values.port);
        if (!/^\d+$/.test(String(values.port)) || port > 65535) {
            throw new UsageError(`--port ${JSON.stringify(values.port)}: expected a port number from 0 to 65535`);
        }
    }
    return loadConfig({
        config: values.config,
        dataDir: values['data-dir'],
        host: values.host,
        port,
        store: values.store
    });
}
async function serve(args) {
    const { values } = parse(args, {
        host: { type: 'string' },
        port: { type: 'string' },
        role: { type: 'string' }
    });
    if (values.help)
        return help();
    const role = (values.role ?? 'all');
    if (!['all', 'api', 'worker'].includes(role))
        throw new UsageError(`--role ${JSON.stringify(values.role)}: expected all, api or worker`);
    const config = configFrom(values);
    if (role !== 'all' && config.store.kind !== 'postgres') {
        throw new UsageError(`--role ${role}: needs a store shared with other nodes; ` +
            'set AGENT_EXECUTOR_STORE=postgres://USER:PASSWORD@HOST:PORT/DB (or --store; SQLite serves one node, with --role all)');
    }
    const release = lockDataDir(config.dataDir);
    let executor;
    try {
        const store = await openStore(config.store);
        executor = await startExecutor(config, store, role);
    }
    catch (error) {
        release();
        throw error;
    }
    executor.app.log.info({ store: describeStore(config.store), role }, 'store opened');
    console.log(`listening on ${executor.url}`);
    return new Promise(resolve => {
        let signals = 0;
        const shutdown = (signal) => {
            if (++signals > 1) {
                executor.app.log.warn('second signal: exiting now');
                release();
                process.exit(1);
            }
            executor.app.log.info({ signal }, `stopping: running runs get up to ${config.shutdownGraceMs / 1000} s`);
            executor
                .stop()
                .then(() => resolve(0))
                .catch(error => {
                console.error(`agent-executor: stopping failed: ${error.message}`);
                resolve(1);
            })
                .finally(release);
        };
        process.on('SIGTERM', shutdown);
        process.on('SIGINT', shutdown);
    });
}
/** One server per data dir: a second one would fail the first one's runs as abandoned. */
function lockDataDir(dataDir) {
    const path = (0,external_node_path_.join)(dataDir, 'executor.pid');
    if ((0,external_node_fs_.existsSync)(path)) {
        const pid = Number((0,external_node_fs_.readFileSync)(path, 'utf8').trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
            throw new Error(`another executor (pid ${pid}) is serving data dir ${dataDir}; stop it or use another --data-dir`);
        }
    }
    (0,external_node_fs_.mkdirSync)(dataDir, { recursive: true });
    (0,external_node_fs_.writeFileSync)(path, `${process.pid}\n`);
    return () => (0,external_node_fs_.rmSync)(path, { force: true });
}
function alive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    }
    catch (error) {
        return error.code === 'EPERM';
    }
}
async function keys(args) {
    const [action, ...rest] = args;
    const { values, positionals } = parse(rest, { kind: { type: 'string' }, name: { type: 'string' }, team: { type: 'string' } }, action === 'revoke' ? 1 : 0);
    if (values.help)
        return help();
    const config = configFrom(values);
    const store = await openStore(config.store);
    try {
        switch (action) {
            case 'create': {
                const kind = values.kind;
                if (kind !== 'personal' && kind !== 'agent') {
                    throw new UsageError(`--kind ${JSON.stringify(values.kind ?? '')}: expected personal or agent`);
                }
                const name = (values.name ?? '').trim();
                if (name === '')
                    throw new UsageError('--name: expected a name for the key, e.g. --name ci');
                const team = (values.team ?? 'default').trim();
                if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(team)) {
                    throw new UsageError(`--team ${JSON.stringify(team)}: expected 1–64 letters, digits, '.', '_' or '-'`);
                }
                const { raw, id } = await issueKey(store, { team, kind, name });
                console.log(`Created ${kind} key ${id} (${name}) for team ${team}. Copy it now: it is not shown again.`);
                console.log(raw);
                return 0;
            }
            case 'list': {
                const rows = await store.listKeys();
                if (rows.length === 0)
                    console.log('No keys. Create one with: agent-executor keys create --kind personal --name NAME');
                for (const key of rows) {
                    const status = key.revoked_at ? `revoked ${key.revoked_at}` : 'active';
                    console.log([key.id, key.team, key.kind, key.name, key.hint, key.created_at, status].join('\t'));
                }
                return 0;
            }
            case 'revoke': {
                const id = positionals[0];
                if (!id)
                    throw new UsageError('keys revoke: expected the key id, e.g. keys revoke key_abc123');
                if (!(await store.revokeKey(id, new Date().toISOString()))) {
                    throw new UsageError(`keys revoke: no active key with id ${JSON.stringify(id)} (see keys list)`);
                }
                console.log(`Revoked key ${id}.`);
                return 0;
            }
            default:
                throw new UsageError(`unknown keys command ${JSON.stringify(action ?? '')}; expected create, list or revoke`);
        }
    }
    finally {
        await store.close();
    }
}
function environments(args) {
    const [action, ...rest] = args;
    const { values } = parse(rest, {});
    if (values.help)
        return help();
    if (action !== 'list')
        throw new UsageError(`unknown environments command ${JSON.stringify(action ?? '')}; expected list`);
    const config = configFrom(values);
    for (const env of config.environments) {
        const agent = env.agent.kind === 'command' ? `command: ${env.agent.command?.join(' ')}` : env.agent.kind;
        console.log([
            env.id,
            env.name,
            env.source,
            agent,
            `timeout ${env.timeoutMs / 1000}s`,
            `max ${env.maxConcurrentRuns} at once`
        ].join('\t'));
    }
    return 0;
}
function help() {
    console.log(USAGE);
    return 0;
}


/***/ })

};
