export * from './companies.js';
export * from './webhooks.js';
export * from './notifications.js';
export * from './resources.js';
export * from './leads.js';
export * from './quotes.js';
export * from './views.js';
export * from './console-sessions.js';
