import type { NotificationHandler } from './registry.js';

/**
 * Types Skyhook has no logic for (new event types appear without notice): the snapshot and the event
 * row are all there is to do, and a company's own application can follow them with SQL.
 */
export const fallbackHandler: NotificationHandler = {
  type: '*',
  handle: async () => {},
};
