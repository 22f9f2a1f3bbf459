/**
 * A local resource server standing in for the marketplace's resource GETs: answers every
 * GET /api/<type>/<id> with a small enveloped resource at once, and counts GETs per path.
 */
import http from 'node:http';

const counts = new Map<string, number>();
const server = http.createServer((req, res) => {
  if (req.url === '/_counts') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(Object.fromEntries(counts)));
    return;
  }
  const path = req.url ?? '/';
  counts.set(path, (counts.get(path) ?? 0) + 1);
  const [, , type, id] = path.split('/');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ meta: { errors: [], warnings: [], infos: [] }, data: { id, type, version: counts.get(path), status: 'open' } }));
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
