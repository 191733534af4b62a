import { availableParallelism } from 'node:os';

/**
 * The executor's API suites that run a second time on PostgreSQL, in the same pool as the rest
 * (the `postgres` project): one server for the whole test run (__tests__/support/postgres-global.mjs),
 * a database of its own for each executor a file starts.
 */
export const POSTGRES_SUITES = [
  'executor/api-runs',
  'executor/api-requests',
  'executor/api-paging',
  'executor/api-lists',
  'executor/limits',
  'executor/results',
  'executor/run-hold',
  'executor/team-fairness',
  'executor/child-runs',
  'executor/webhooks',
  'executor/event-stream',
  'executor/orchestrate',
  'executor/schedules',
  'executor/schedules-restart',
  'executor/webhooks-restart'
];

/**
 * Workers for suites that mostly wait (on real executors, child processes, sandboxes and sockets),
 * not for cores: twice the cores, at least 4. AGENT_RUN_TEST_WORKERS (a whole number) or jest's own
 * --maxWorkers overrides it.
 */
function workers() {
  const asked = process.env.AGENT_RUN_TEST_WORKERS;
  if (asked === undefined || asked === '') return Math.max(4, 2 * availableParallelism());
  if (!/^[1-9][0-9]*$/.test(asked))
    throw new Error(
      `AGENT_RUN_TEST_WORKERS ${JSON.stringify(asked)}: expected a whole number of workers such as 4`
    );
  return Number(asked);
}

const shared = {
  // Kept with the checkout, not in the test run's temp dir (removed after every run): compiled
  // files and each file's last duration, which orders the next run.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: { isolatedModules: true }, diagnostics: false }]
  }
};

/** @type {import('jest').Config} */
export default {
  maxWorkers: workers(),
  // Generous: tests wait for events, not for time, and a loaded 2-core machine can be slow to make them.
  testTimeout: 120000,
  // The slowest files first: by their last durations, else by folder and size.
  testSequencer: '<rootDir>/scripts/test-sequencer.mjs',
  reporters: ['default', '<rootDir>/scripts/slowest-reporter.mjs'],
  projects: [
    {
      ...shared,
      displayName: 'sqlite',
      testMatch: ['<rootDir>/__tests__/**/*.test.ts']
    },
    {
      ...shared,
      displayName: 'postgres',
      testMatch: POSTGRES_SUITES.map(suite => `<rootDir>/__tests__/${suite}.test.ts`),
      globalSetup: '<rootDir>/__tests__/support/postgres-global.mjs',
      globalTeardown: '<rootDir>/__tests__/support/postgres-global-teardown.mjs',
      setupFiles: ['<rootDir>/__tests__/support/on-postgres.ts']
    }
  ]
};
