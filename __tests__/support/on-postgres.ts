// The `postgres` project's files: their executors' stores are databases on the test run's one
// PostgreSQL server (support/executor.ts reads this; support/postgres-global.ts starts the server).
process.env.AGENT_EXECUTOR_TEST_STORE = 'postgres';
