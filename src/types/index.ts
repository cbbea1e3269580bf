/** The shared vocabulary (the bottom layer): import types from here. */
export type * from './run.js';
export type * from './store.js';
export * from './tools.js';
