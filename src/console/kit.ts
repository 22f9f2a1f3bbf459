/**
 * What the console's pages are handed (plugin.ts makes it; the pages only take it): the services and
 * settings the console runs on, and the kit every route handler renders and answers with.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Problem } from '../lib/problem.js';
import type { Services } from '../services/index.js';
import type { NotificationStream } from '../services/notification-stream.js';
import type { Html } from './html.js';
import type { PageContext } from './layout.js';
import type { Keys } from '../access/keys.js';
import type { SessionStore } from '../access/sessions.js';

export interface ConsoleDeps {
  adminToken: string;
  services: Pick<Services, 'companies' | 'webhooks' | 'deletions' | 'notifications' | 'leads' | 'quotes' | 'declines' | 'overview' | 'destinations' | 'audit' | 'keys'>;
  stream: NotificationStream;
  sessions: SessionStore;
  /** Sign-in checks a key as the guard does. */
  keys: Pick<Keys, 'authenticate'>;
  /** PUBLIC_BASE_URL: its path prefixes the console's URLs, and https makes the cookie Secure. */
  publicBaseUrl: string;
}

/** What every route handler gets: the page context and a renderer. */
export interface ConsoleKit {
  deps: ConsoleDeps;
  ctx(req: FastifyRequest): PageContext;
  /** Answers HTML: a whole page, or a fragment for htmx. */
  send(reply: FastifyReply, markup: Html, status?: number): FastifyReply;
  /** 303 to a console path (after a successful POST: reloading the page does not repeat it). */
  redirect(reply: FastifyReply, path: string): FastifyReply;
  /** Any error as a problem (status, title, detail, fields), to show in a page. */
  problem(err: unknown): Problem;
  /** `err` as a problem to show on the page the form came from, when the operator can act on it; else rethrown. */
  refusal(err: unknown): Problem;
  /** Runs a form's action and redirects to `then` of its answer; `page`, the form's own page, shows markup it answers (a secret shown once) or a refusal to act on. */
  act<T>(reply: FastifyReply, work: () => Promise<T | Html>, then: (done: T) => string, page: (problem?: Problem, shown?: Html) => Promise<FastifyReply>): Promise<FastifyReply>;
}
