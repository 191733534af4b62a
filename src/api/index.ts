export * from './run.js';
export * from './error-codes.js';
export * from './duration.js';
export * from './values.js';
export * from './conversation.js';
export * from './artifacts.js';
export * from './table.js';
export * from './endpoints.js';
