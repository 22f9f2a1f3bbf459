import { fallbackHandler } from './fallback.js';
import { leadsHandler } from './leads.js';
import { HandlerRegistry, type NotificationHandler } from './registry.js';
import { tripmsgsHandler } from './tripmsgs.js';

export type { HandlerContext, NotificationHandler } from './registry.js';
export { HandlerRegistry } from './registry.js';

/**
 * The built-in handlers. Adding one is one file in this folder and one line here (see README).
 * `rfqs` and `emptylegs` have nothing of Skyhook's to link to yet: the fallback stores them.
 */
const BUILT_IN: NotificationHandler[] = [leadsHandler, tripmsgsHandler];

export const builtInHandlers = (): HandlerRegistry => new HandlerRegistry(BUILT_IN, fallbackHandler);
