// `npm run build`'s second step: the Redis scripts (src/**/*.lua, loaded by name at run time: lib/redis/scripts.ts)
// go beside the compiled JavaScript, in the same folders, since tsc copies only what it compiles.
import { cpSync } from 'node:fs';

cpSync('src', 'dist', { recursive: true, filter: (path) => !/\.[a-z]+$/.test(path) || path.endsWith('.lua') });
