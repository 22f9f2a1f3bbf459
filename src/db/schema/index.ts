export * from './companies.js';
export * from './webhooks.js';
export * from './notifications.js';
export * from './resources.js';
