// Versioned schema migrations, one list per store. Each runs once, in its own transaction; the applied versions are
// recorded in schema_migrations (SQLite) or agent_executor_migrations (PostgreSQL, where the database
// may be shared with other tools' tables). Never edit a released migration: add the next one.

export const SQLITE_MIGRATIONS: { version: number; name: string; sql: string }[] = [
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
  },
  {
    version: 2,
    name: 'runs.changed_at, for processes sharing the file to find what others changed',
    sql: `
      ALTER TABLE runs ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX runs_changed_at ON runs (changed_at);
    `
  },
  {
    version: 3,
    name: 'artifacts and request usage',
    sql: `
      ALTER TABLE runs ADD COLUMN artifacts TEXT;
      ALTER TABLE runs ADD COLUMN request_usage TEXT;
      CREATE TABLE artifacts (
        artifact_uid TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        team TEXT NOT NULL,
        artifact_type TEXT NOT NULL,
        filepath TEXT NOT NULL,
        filename TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        description TEXT,
        created_at TEXT NOT NULL,
        data BLOB NOT NULL
      );
      CREATE INDEX artifacts_run ON artifacts (run_id);
    `
  },
  {
    version: 4,
    name: 'dashboard sign-in sessions, node heartbeats',
    sql: `
      CREATE TABLE web_sessions (
        id_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        team TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
      CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        workers INTEGER NOT NULL,
        busy INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        seen_at INTEGER NOT NULL
      );
    `
  },
  {
    version: 5,
    name: 'scheduled agents',
    sql: `
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        spec TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        next_run_ms INTEGER,
        last_ran TEXT,
        last_run_id TEXT,
        last_spawn_error TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX schedules_team ON schedules (team);
      CREATE INDEX schedules_due ON schedules (next_run_ms) WHERE enabled = 1;
    `
  },
  {
    version: 6,
    name: 'fair claims across teams (a claim moves its team to the back), run holds',
    sql: `
      CREATE INDEX runs_team_queued ON runs (team, seq) WHERE state = 'QUEUED';
      CREATE INDEX runs_team_running ON runs (team) WHERE state = 'INPROGRESS';
      ALTER TABLE runs ADD COLUMN held_by TEXT;
      ALTER TABLE runs ADD COLUMN held_until INTEGER;
      CREATE INDEX runs_held ON runs (held_until) WHERE held_by IS NOT NULL;
      CREATE TABLE team_turns (team TEXT PRIMARY KEY, turn INTEGER NOT NULL);
      CREATE INDEX team_turns_turn ON team_turns (turn);
      CREATE TRIGGER runs_team_served AFTER UPDATE OF state ON runs
        WHEN NEW.state = 'INPROGRESS' AND OLD.state <> 'INPROGRESS'
      BEGIN
        INSERT INTO team_turns (team, turn) VALUES (NEW.team, (SELECT COALESCE(MAX(turn), 0) + 1 FROM team_turns))
          ON CONFLICT (team) DO UPDATE SET turn = excluded.turn;
      END;
    `
  },
  {
    version: 7,
    name: "run_metadata: a run's metadata pairs as rows, so a metadata[k]=v filter is an index lookup",
    sql: `
      CREATE TABLE run_metadata (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
      ) WITHOUT ROWID;
      CREATE INDEX run_metadata_pair ON run_metadata (team, key, value, run_id);
      INSERT INTO run_metadata (run_id, team, key, value)
        SELECT runs.run_id, runs.team, pair.key, pair.value
        FROM runs, json_each(runs.extra, '$.metadata') AS pair
        WHERE json_valid(runs.extra) AND json_type(runs.extra, '$.metadata') = 'object' AND pair.type = 'text';
    `
  },
  {
    version: 8,
    name: 'webhook endpoints and their deliveries, written by triggers in the transaction of each change (an outbox)',
    sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT,
        description TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_until INTEGER,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT,
        disabled_reason TEXT
      );
      CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team) WHERE disabled_at IS NULL;
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL,
        team TEXT NOT NULL,
        run_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        state TEXT NOT NULL,
        previous_state TEXT,
        status_message TEXT,
        error_code TEXT,
        created_at TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        body TEXT,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER,
        last_status INTEGER,
        last_error TEXT,
        last_attempt_at TEXT,
        lease_owner TEXT,
        lease_expires_at INTEGER
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_ms);
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_expires_at)
        WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_team_leased ON webhook_deliveries (team, lease_expires_at)
        WHERE status = 'pending';
      CREATE TRIGGER runs_webhook_created AFTER INSERT ON runs
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || lower(hex(randomblob(16))), e.id, NEW.team, NEW.run_id, 'run.queued', NEW.state, NULL,
            NULL, NULL, NEW.updated_at, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'pending',
            CAST(unixepoch('subsec') * 1000 AS INTEGER)
          FROM webhook_endpoints e
          WHERE e.team = NEW.team AND e.disabled_at IS NULL
            AND (e.events IS NULL OR instr(e.events, ',run.queued,') > 0);
      END;
      CREATE TRIGGER runs_webhook_changed AFTER UPDATE OF state ON runs WHEN NEW.state <> OLD.state
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || lower(hex(randomblob(16))), e.id, NEW.team, NEW.run_id, kind.type, NEW.state, OLD.state,
            NEW.status_message, NEW.error_code, NEW.updated_at, CAST(unixepoch('subsec') * 1000 AS INTEGER),
            'pending', CAST(unixepoch('subsec') * 1000 AS INTEGER)
          FROM webhook_endpoints e,
            (SELECT CASE NEW.state WHEN 'QUEUED' THEN 'run.queued' WHEN 'INPROGRESS' THEN 'run.in_progress'
              WHEN 'BLOCKED' THEN 'run.blocked' WHEN 'SUCCEEDED' THEN 'run.succeeded' WHEN 'FAILED' THEN 'run.failed'
              WHEN 'ERROR' THEN 'run.error' WHEN 'CANCELLED' THEN 'run.cancelled'
              ELSE 'run.' || lower(NEW.state) END AS type) AS kind
          WHERE e.team = NEW.team AND e.disabled_at IS NULL
            AND (e.events IS NULL OR instr(e.events, ',' || kind.type || ',') > 0);
      END;
      CREATE TRIGGER events_webhook_followup AFTER INSERT ON events WHEN NEW.kind = 'followup'
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || lower(hex(randomblob(16))), e.id, r.team, r.run_id, 'run.followup', r.state, r.state,
            NULL, NULL, NEW.at, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'pending',
            CAST(unixepoch('subsec') * 1000 AS INTEGER)
          FROM runs r JOIN webhook_endpoints e ON e.team = r.team
          WHERE r.run_id = NEW.run_id AND e.disabled_at IS NULL
            AND (e.events IS NULL OR instr(e.events, ',run.followup,') > 0);
      END;
    `
  },
  {
    version: 9,
    name: "run_ancestors: a child run's parent and the parent's own ancestors as rows, so ancestor_run_id is an index lookup",
    sql: `
      CREATE TABLE run_ancestors (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        ancestor_run_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        PRIMARY KEY (run_id, ancestor_run_id)
      ) WITHOUT ROWID;
      CREATE INDEX run_ancestors_of ON run_ancestors (team, ancestor_run_id, run_id);
    `
  },
  {
    version: 10,
    name: 'runs.workload: the claims of the OIDC token that created a run (repository, ref, workflow_ref, run_id)',
    sql: `ALTER TABLE runs ADD COLUMN workload TEXT;`
  },
  {
    version: 11,
    name: "run_state_events: each run's changes of state, numbered by one sequence, for the events cursor",
    // A trigger writes the row in the transaction that changes the state, so no change is missed and
    // none is told before it is committed. SQLite has one writer: the sequence is the commit order.
    sql: `
      CREATE TABLE run_state_events (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        team TEXT NOT NULL,
        run_id TEXT NOT NULL,
        state TEXT NOT NULL,
        at TEXT NOT NULL
      );
      CREATE INDEX run_state_events_run ON run_state_events (run_id, sequence);
      CREATE TRIGGER runs_state_event AFTER UPDATE OF state ON runs
        WHEN NEW.state <> OLD.state
          AND NEW.state IN ('INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'BLOCKED', 'CANCELLED')
      BEGIN
        INSERT INTO run_state_events (team, run_id, state, at)
          VALUES (NEW.team, NEW.run_id, NEW.state, NEW.updated_at);
      END;
      CREATE TRIGGER runs_state_events_pruned AFTER DELETE ON runs
      BEGIN
        DELETE FROM run_state_events WHERE run_id = OLD.run_id;
      END;
    `
  },
  {
    version: 12,
    name: "run_tokens: the SHA-256 of each orchestrate turn's credential and of its proxy's secret",
    sql: `
      CREATE TABLE run_tokens (
        hash TEXT PRIMARY KEY,
        via_hash TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX run_tokens_run ON run_tokens (run_id);
    `
  },
  {
    version: 13,
    name: 'key_changes: a counter every write to api_keys moves, so key caches outlive commits that touch no key',
    // Triggers, so every writer moves it (the CLI's keys commands, another process, an older
    // executor sharing the file) in the transaction of the key write itself. PostgreSQL needs none:
    // its key writes are told to every node by notification (postgres/dialect.ts).
    sql: `
      CREATE TABLE key_changes (id INTEGER PRIMARY KEY CHECK (id = 1), changes INTEGER NOT NULL);
      INSERT INTO key_changes (id, changes) VALUES (1, 0);
      CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys
      BEGIN
        UPDATE key_changes SET changes = changes + 1 WHERE id = 1;
      END;
      CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys
      BEGIN
        UPDATE key_changes SET changes = changes + 1 WHERE id = 1;
      END;
      CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys
      BEGIN
        UPDATE key_changes SET changes = changes + 1 WHERE id = 1;
      END;
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
export const POSTGRES_MIGRATIONS: { version: number; name: string; sql: string }[] = [
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
  },
  {
    version: 2,
    name: 'artifacts and request usage',
    sql: `
      ALTER TABLE runs ADD COLUMN artifacts TEXT;
      ALTER TABLE runs ADD COLUMN request_usage TEXT;
      CREATE TABLE artifacts (
        artifact_uid TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        team TEXT NOT NULL,
        artifact_type TEXT NOT NULL,
        filepath TEXT NOT NULL,
        filename TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        size BIGINT NOT NULL,
        description TEXT,
        created_at TEXT NOT NULL,
        data BYTEA NOT NULL
      );
      CREATE INDEX artifacts_run ON artifacts (run_id);
    `
  },
  {
    version: 3,
    name: 'dashboard sign-in sessions, node heartbeats',
    sql: `
      CREATE TABLE web_sessions (
        id_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        team TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
      CREATE TABLE nodes (
        node_id TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        workers INTEGER NOT NULL,
        busy INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        seen_at BIGINT NOT NULL
      );
    `
  },
  {
    version: 4,
    name: 'scheduled agents',
    sql: `
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        spec TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        next_run_ms BIGINT,
        last_ran TEXT,
        last_run_id TEXT,
        last_spawn_error TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX schedules_team ON schedules (team);
      CREATE INDEX schedules_due ON schedules (next_run_ms) WHERE enabled = 1;
    `
  },
  {
    version: 5,
    name: 'fair claims across teams (a claim moves its team to the back), run holds',
    sql: `
      CREATE INDEX runs_team_queued ON runs (team, seq) WHERE state = 'QUEUED';
      CREATE INDEX runs_team_running ON runs (team) WHERE state = 'INPROGRESS';
      ALTER TABLE runs ADD COLUMN held_by TEXT;
      ALTER TABLE runs ADD COLUMN held_until BIGINT;
      CREATE INDEX runs_held ON runs (held_until) WHERE held_by IS NOT NULL;
      CREATE TABLE team_turns (team TEXT PRIMARY KEY, turn BIGINT NOT NULL);
      CREATE INDEX team_turns_turn ON team_turns (turn);
      CREATE FUNCTION agent_executor_team_served() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO team_turns (team, turn) VALUES (NEW.team, (SELECT COALESCE(MAX(turn), 0) + 1 FROM team_turns))
          ON CONFLICT (team) DO UPDATE SET turn = excluded.turn;
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_team_served AFTER UPDATE OF state ON runs FOR EACH ROW
        WHEN (NEW.state = 'INPROGRESS' AND OLD.state <> 'INPROGRESS')
        EXECUTE FUNCTION agent_executor_team_served();
    `
  },
  {
    version: 6,
    name: "run_metadata: a run's metadata pairs as rows, so a metadata[k]=v filter is an index lookup",
    // Runs whose extra holds an escaped NUL are left out: PostgreSQL text cannot hold one (and the
    // list's old filter, which cast extra to jsonb, failed on them).
    sql: `
      CREATE TABLE run_metadata (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
      );
      CREATE INDEX run_metadata_pair ON run_metadata (team, key, value, run_id);
      INSERT INTO run_metadata (run_id, team, key, value)
        SELECT kept.run_id, kept.team, pair.key, pair.value #>> '{}'
        FROM (
          SELECT run_id, team, extra::json -> 'metadata' AS metadata FROM runs
          WHERE position('\\u0000' in extra) = 0
        ) AS kept
        CROSS JOIN LATERAL json_each(
          CASE WHEN json_typeof(kept.metadata) = 'object' THEN kept.metadata ELSE '{}'::json END
        ) AS pair
        WHERE json_typeof(pair.value) = 'string';
    `
  },
  {
    version: 7,
    name: 'webhook endpoints and their deliveries, written by triggers in the transaction of each change (an outbox)',
    // status_message is bytea like the run's (it may hold a NUL), copied as it is.
    sql: `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        team TEXT NOT NULL,
        url TEXT NOT NULL,
        events TEXT,
        description TEXT NOT NULL,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_until BIGINT,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT,
        disabled_reason TEXT
      );
      CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team) WHERE disabled_at IS NULL;
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL,
        team TEXT NOT NULL,
        run_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        state TEXT NOT NULL,
        previous_state TEXT,
        status_message BYTEA,
        error_code TEXT,
        created_at TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        body TEXT,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms BIGINT,
        last_status INTEGER,
        last_error TEXT,
        last_attempt_at TEXT,
        lease_owner TEXT,
        lease_expires_at BIGINT
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_ms);
      CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_expires_at)
        WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_team_leased ON webhook_deliveries (team, lease_expires_at)
        WHERE status = 'pending';
      CREATE FUNCTION agent_executor_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        kind TEXT;
        previous TEXT := NULL;
        now_ms BIGINT := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE team = NEW.team AND disabled_at IS NULL) THEN
          RETURN NULL;
        END IF;
        IF TG_OP = 'UPDATE' THEN previous := OLD.state; END IF;
        kind := CASE NEW.state WHEN 'QUEUED' THEN 'run.queued' WHEN 'INPROGRESS' THEN 'run.in_progress'
          WHEN 'BLOCKED' THEN 'run.blocked' WHEN 'SUCCEEDED' THEN 'run.succeeded' WHEN 'FAILED' THEN 'run.failed'
          WHEN 'ERROR' THEN 'run.error' WHEN 'CANCELLED' THEN 'run.cancelled' ELSE 'run.' || lower(NEW.state) END;
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, NEW.team, NEW.run_id, kind, NEW.state,
            previous, CASE WHEN TG_OP = 'UPDATE' THEN NEW.status_message END, NEW.error_code, NEW.updated_at,
            now_ms, 'pending', now_ms
          FROM webhook_endpoints e
          WHERE e.team = NEW.team AND e.disabled_at IS NULL
            AND (e.events IS NULL OR position(',' || kind || ',' in e.events) > 0);
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_webhook_created AFTER INSERT ON runs FOR EACH ROW
        EXECUTE FUNCTION agent_executor_webhook_outbox();
      CREATE TRIGGER runs_webhook_changed AFTER UPDATE OF state ON runs FOR EACH ROW
        WHEN (NEW.state <> OLD.state) EXECUTE FUNCTION agent_executor_webhook_outbox();
      CREATE FUNCTION agent_executor_webhook_followup() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE now_ms BIGINT := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      BEGIN
        INSERT INTO webhook_deliveries (id, endpoint_id, team, run_id, event_type, state, previous_state,
            status_message, error_code, created_at, created_ms, status, next_attempt_ms)
          SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, r.team, r.run_id, 'run.followup',
            r.state, r.state, NULL, NULL, NEW.at, now_ms, 'pending', now_ms
          FROM runs r JOIN webhook_endpoints e ON e.team = r.team
          WHERE r.run_id = NEW.run_id AND e.disabled_at IS NULL
            AND (e.events IS NULL OR position(',run.followup,' in e.events) > 0);
        RETURN NULL;
      END $$;
      CREATE TRIGGER events_webhook_followup AFTER INSERT ON events FOR EACH ROW
        WHEN (NEW.kind = 'followup') EXECUTE FUNCTION agent_executor_webhook_followup();
    `
  },
  {
    version: 8,
    name: "run_ancestors: a child run's parent and the parent's own ancestors as rows, so ancestor_run_id is an index lookup",
    sql: `
      CREATE TABLE run_ancestors (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        ancestor_run_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        PRIMARY KEY (run_id, ancestor_run_id)
      );
      CREATE INDEX run_ancestors_of ON run_ancestors (team, ancestor_run_id, run_id);
    `
  },
  {
    version: 9,
    name: 'runs.workload: the claims of the OIDC token that created a run (repository, ref, workflow_ref, run_id)',
    sql: `ALTER TABLE runs ADD COLUMN workload TEXT;`
  },
  {
    version: 10,
    name: "run_state_events: each run's changes of state, numbered per team, for the events cursor",
    // Numbered by a per-team counter row, taken in the transaction that changes the state: the row
    // stays locked until that commit, so a reader that sees number n of a team has every number
    // below it committed too (a shared sequence would hand out numbers out of commit order).
    sql: `
      CREATE TABLE team_event_sequence (team TEXT PRIMARY KEY, sequence BIGINT NOT NULL);
      CREATE TABLE run_state_events (
        team TEXT NOT NULL,
        sequence BIGINT NOT NULL,
        run_id TEXT NOT NULL,
        state TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (team, sequence)
      );
      CREATE INDEX run_state_events_run ON run_state_events (run_id, sequence);
      CREATE FUNCTION agent_executor_state_event() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE numbered BIGINT;
      BEGIN
        INSERT INTO team_event_sequence (team, sequence) VALUES (NEW.team, 1)
          ON CONFLICT (team) DO UPDATE SET sequence = team_event_sequence.sequence + 1
          RETURNING sequence INTO numbered;
        INSERT INTO run_state_events (team, sequence, run_id, state, at)
          VALUES (NEW.team, numbered, NEW.run_id, NEW.state, NEW.updated_at);
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_state_event AFTER UPDATE OF state ON runs FOR EACH ROW
        WHEN (NEW.state <> OLD.state
          AND NEW.state IN ('INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'BLOCKED', 'CANCELLED'))
        EXECUTE FUNCTION agent_executor_state_event();
      CREATE FUNCTION agent_executor_state_events_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM run_state_events WHERE run_id = OLD.run_id;
        RETURN NULL;
      END $$;
      CREATE TRIGGER runs_state_events_pruned AFTER DELETE ON runs FOR EACH ROW
        EXECUTE FUNCTION agent_executor_state_events_pruned();
    `
  },
  {
    version: 11,
    name: "run_tokens: the SHA-256 of each orchestrate turn's credential and of its proxy's secret",
    sql: `
      CREATE TABLE run_tokens (
        hash TEXT PRIMARY KEY,
        via_hash TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        team TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX run_tokens_run ON run_tokens (run_id);
    `
  }
];
