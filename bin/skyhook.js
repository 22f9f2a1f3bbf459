#!/usr/bin/env node
// The `skyhook` command. From a checkout it runs the TypeScript sources through tsx (no build step);
// in the container image, where only dist/ ships, it runs the compiled JavaScript.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('../src/cli.ts', import.meta.url);
if (existsSync(fileURLToPath(source))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/cli.js', import.meta.url).href);
}
