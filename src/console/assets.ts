/**
 * The console's static files, all served by Skyhook itself (SPEC §13: no asset from another origin): htmx,
 * its SSE extension and uPlot from their npm packages, the console's own CSS and script from public/console.
 * Read once at start-up; each is served under a URL holding its content hash, so it can be cached for a year.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
/** public/ sits beside src/ in a checkout and beside dist/ in the image. */
const publicFile = (name: string) => fileURLToPath(new URL(`../../public/console/${name}`, import.meta.url));

const FILES: Record<string, { path: string; type: string }> = {
  'htmx.js': { path: require.resolve('htmx.org/dist/htmx.min.js'), type: 'text/javascript; charset=utf-8' },
  'htmx-sse.js': { path: require.resolve('htmx-ext-sse/dist/sse.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.js': { path: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.css': { path: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
  'console.js': { path: publicFile('console.js'), type: 'text/javascript; charset=utf-8' },
  'console.css': { path: publicFile('console.css'), type: 'text/css; charset=utf-8' },
  'favicon.svg': { path: publicFile('favicon.svg'), type: 'image/svg+xml' },
};

interface Asset {
  body: Buffer;
  type: string;
  hash: string;
}

export function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [name, file] of Object.entries(FILES)) {
    const body = readFileSync(file.path);
    assets.set(name, { body, type: file.type, hash: createHash('sha256').update(body).digest('base64url').slice(0, 16) });
  }
  return assets;
}
