export * from './run.js';
export * from './error-codes.js';
