export * from './run.js';
export * from './error-codes.js';
export * from './values.js';
export * from './conversation.js';
export * from './artifacts.js';
export * from './events.js';
export * from './endpoints.js';
export * from './suggest.js';
