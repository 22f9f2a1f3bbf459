// The resolve hook module-log.mjs registers (it runs on Node's loader thread).
import { appendFileSync } from 'node:fs';

let file;
let match;

export function initialize(data) {
  file = data.file;
  match = new RegExp(data.match);
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (file && match.test(resolved.url)) appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
