/** `keel/server`: run Keel as a service from code, and check the webhooks it sends. */

export { allows, type Role, type TokenRecord, Tokens } from './access/tokens.js';
export { type Notification, type NotifyEventType, verifySignature } from './alerts/notify.js';
export { createApp, openApi, type ServerDeps } from './api/app.js';
export { type RunningServer, type ServeOptions, startServer } from './serve.js';
export { Hub, LegRunner } from './workers/runner.js';
