// Stops the test run's one PostgreSQL server (postgres-global.mjs) and removes its files.
export { teardown as default } from './postgres-global.mjs';
