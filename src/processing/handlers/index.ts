import { fallbackHandler } from './fallback.js';
import { HandlerRegistry, type NotificationHandler } from './registry.js';

export type { HandlerContext, NotificationHandler } from './registry.js';
export { HandlerRegistry } from './registry.js';

/** The built-in handlers. Adding one is one file in this folder and one line here (see README). */
const BUILT_IN: NotificationHandler[] = [];

export const builtInHandlers = (): HandlerRegistry => new HandlerRegistry(BUILT_IN, fallbackHandler);
