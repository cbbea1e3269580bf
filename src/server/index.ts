/** `keel/server`: run Keel as a service from code, and check the webhooks it sends. */
export { createApp, openApi, type ServerDeps } from './app.js';
export { type Notification, type NotifyEventType, verifySignature } from './notify.js';
export { Hub, LegRunner } from './runner.js';
export { type RunningServer, type ServeOptions, startServer } from './serve.js';
export { allows, type Role, type TokenRecord, Tokens } from './tokens.js';
