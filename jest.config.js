/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: { isolatedModules: true }, diagnostics: false }]
  },
  testMatch: ['<rootDir>/__tests__/**/*.test.ts'],
  // Generous: tests wait for events, not for time, and a loaded 2-core machine can be slow to make them.
  testTimeout: 120000
};
