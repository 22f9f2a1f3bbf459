import { leadsHandler } from './leads.js';
import { HandlerRegistry, type NotificationHandler } from './registry.js';
import { tripmsgsHandler } from './tripmsgs.js';

export type { HandlerContext, NotificationHandler } from './registry.js';
export { HandlerRegistry } from './registry.js';

/**
 * The built-in handlers. Adding one is one file in this folder and one line here (see README).
 * `rfqs`, `emptylegs` and unknown types have nothing of Skyhook's to link to: the snapshot and the
 * event row (with its NOTIFY) are all that happens for them, and a company's application follows them.
 */
const BUILT_IN: NotificationHandler[] = [leadsHandler, tripmsgsHandler];

export const builtInHandlers = (): HandlerRegistry => new HandlerRegistry(BUILT_IN);
