/**
 * The operators' admin CLI (SPEC §7): the admin API's operations as `skyhook` commands, over the same
 * services and validated with the same schemas, so the CLI and the API accept the same things. One file
 * per command group; command.ts is what they share. `listen` needs no services: a local receiver of deliveries.
 */
import type { Command } from 'commander';
import { registerCompanies } from './companies.js';
import { registerDeliveries } from './deliveries.js';
import { registerDestinations } from './destinations.js';
import { registerEvents } from './events.js';
import { registerAudit, registerKeys } from './access.js';
import { registerDeclines, registerLeads, registerQuotes } from './leads-quotes.js';
import { registerListen } from './listen.js';
import { registerNotifications, registerResources } from './notifications.js';
import { registerPartitions } from './partitions.js';
import { registerWebhooks } from './webhooks.js';

export function registerAdminCommands(program: Command): void {
  registerCompanies(program);
  registerWebhooks(program);
  registerLeads(program);
  registerQuotes(program);
  registerDeclines(program);
  registerNotifications(program);
  registerResources(program);
  registerDestinations(program);
  registerDeliveries(program);
  registerEvents(program);
  registerKeys(program);
  registerAudit(program);
  registerListen(program);
  registerPartitions(program);
}
