/* global process, URL */
// Preloaded into a Skyhook process (NODE_OPTIONS=--import) by a test that must know which modules the
// process loaded: every module URL it resolves that matches MODULE_LOG_MATCH is appended to MODULE_LOG_FILE.
// (ESM has no require.cache to read; a resolve hook sees every import, static or dynamic.)
import { register } from 'node:module';

register(new URL('./module-log-hooks.mjs', import.meta.url), { data: { file: process.env.MODULE_LOG_FILE, match: process.env.MODULE_LOG_MATCH } });
