/**
 * `npm run bench -- --traces`: an OTLP/HTTP receiver that takes Skyhook's traces and throws them away,
 * counting the requests, bytes and spans it was sent (GET /_counts), so the bench measures what exporting
 * every span costs Skyhook and shows whether spans were dropped on the way.
 */
import http from 'node:http';

const counts = { requests: 0, bytes: 0, spans: 0 };

/** The fields of a protobuf message: [field number, wire type, value (a length-delimited field's bytes)]. */
function* fields(buf: Buffer): Generator<[number, number, Buffer | undefined]> {
  let i = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = buf[i++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (i < buf.length) {
    const key = varint();
    const [field, wire] = [Math.floor(key / 8), key & 7];
    if (wire === 0) varint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else if (wire === 2) {
      const length = varint();
      yield [field, wire, buf.subarray(i, i + length)];
      i += length;
      continue;
    } else throw new Error(`wire type ${wire}`);
    yield [field, wire, undefined];
  }
}

/** ExportTraceServiceRequest: resource_spans (1) > scope_spans (2) > spans (2). */
function spansIn(body: Buffer, json: boolean): number {
  if (json) {
    const request = JSON.parse(body.toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
    return (request.resourceSpans ?? []).flatMap((r) => r.scopeSpans ?? []).reduce((n, s) => n + (s.spans?.length ?? 0), 0);
  }
  let n = 0;
  for (const [f1, , resourceSpans] of fields(body)) {
    if (f1 !== 1 || !resourceSpans) continue;
    for (const [f2, , scopeSpans] of fields(resourceSpans)) {
      if (f2 !== 2 || !scopeSpans) continue;
      for (const [f3] of fields(scopeSpans)) if (f3 === 2) n++;
    }
  }
  return n;
}

const server = http.createServer((req, res) => {
  if (req.url === '/_counts') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    counts.requests++;
    counts.bytes += body.length;
    counts.spans += spansIn(body, json);
    if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
