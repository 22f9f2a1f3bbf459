/**
 * docs/access.md is the app's own route table with each route's permission (src/access/table.ts): this fails
 * when a route or a role changes and the file does not. `npm run docs:access` writes it anew.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { accessMarkdown } from '../../src/access/table.js';
import { unitApp } from './support/app.js';

const FILE = new URL('../../docs/access.md', import.meta.url);

it('docs/access.md lists every route with who may call it, as the code declares', async () => {
  const { app } = await unitApp();
  try {
    const table = accessMarkdown(app.accessTable());
    if (process.env.WRITE_ACCESS_DOC === '1') await writeFile(FILE, table);
    expect(await readFile(FILE, 'utf8').catch(() => ''), 'docs/access.md is out of date: run `npm run docs:access`').toBe(table);
    expect(table).toContain('| `DELETE /admin/keys/:keyId` | `keys`: admin |');
  } finally {
    await app.close();
  }
});
