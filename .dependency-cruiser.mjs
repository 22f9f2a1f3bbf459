/**
 * The import rules of src/ (README.md, "Where things are"), checked by `npm run check:deps` in CI.
 *
 * The folders are layers, lowest first. A module may import its own folder and the layers below it, never a
 * layer above it, nor a sibling on its own line. Type-only imports count like any other: a type import up
 * a layer still ties the lower folder to the upper one.
 */

/** The layers, lowest first; folders on one line are siblings and may not import each other. */
const LAYERS = [
  ['lib'],
  ['config.ts'],
  ['marketplace'],
  ['db'],
  ['access'],
  ['gate'],
  ['notifications', 'companies', 'destinations'],
  ['processing', 'delivery'],
  ['receiver'],
  ['services'],
  ['admin'],
  ['console'],
];

/** A separate application (its own server and CLI commands): it shares only what the marketplace's two sides agree on. */
const SIMULATOR_MAY_IMPORT = ['lib', 'marketplace'];

/** `src/lib/` for a folder, `src/config.ts` for the one file that is a layer of its own. */
const pathOf = (part) => (part.endsWith('.ts') ? `^src/${part.replace('.', '\\.')}$` : `^src/${part}/`);
/** A folder of src/ or config.ts: what the layer rules look at (the root files are the next rule's). */
const LAYERED = '^src/([^/]+/|config\\.ts$)';
/** The wiring: app.ts, runtime.ts, main.ts, cli.ts, demo.ts, and any other file directly in src/ but config.ts. */
const WIRING = '^src/(?!config\\.ts$)[^/]+\\.ts$';
const KNOWN_FOLDERS = [...LAYERS.flat().filter((part) => !part.endsWith('.ts')), 'simulator'];

const layerRules = LAYERS.flatMap((line, level) => {
  const below = LAYERS.slice(0, level).flat();
  return line.map((part) => ({
    name: `layer-${part.replace('.ts', '')}`,
    severity: 'error',
    comment:
      `src/${part}${part.endsWith('.ts') ? '' : '/'} is layer ${level + 1}: it may import ` +
      (below.length === 0 ? 'only itself' : `itself and the layers below it (${below.join(', ')})`) +
      (line.length > 1 ? `, not its sibling ${line.filter((other) => other !== part).join(', ')}` : '') +
      '. Move what both need down a layer, or pass it in as an argument.',
    from: { path: pathOf(part) },
    to: { path: LAYERED, pathNot: [part, ...below].map(pathOf) },
  }));
});

export default {
  forbidden: [
    ...layerRules,
    {
      name: 'simulator-apart',
      severity: 'error',
      comment: `src/simulator/ is a separate application: besides itself it may import only ${SIMULATOR_MAY_IMPORT.join(' and ')}.`,
      from: { path: pathOf('simulator') },
      to: { path: LAYERED, pathNot: ['simulator', ...SIMULATOR_MAY_IMPORT].map(pathOf) },
    },
    {
      name: 'not-into-wiring',
      severity: 'error',
      comment: 'The files directly in src/ (app.ts, runtime.ts, main.ts, cli.ts, demo.ts) wire the folders together: they may import anything, and nothing in a folder (nor config.ts) may import them.',
      from: { path: LAYERED },
      to: { path: WIRING },
    },
    {
      name: 'folder-in-a-layer',
      severity: 'error',
      comment: `A folder of src/ that is in no layer: add it to LAYERS in .dependency-cruiser.mjs (and to README.md's list). Known: ${KNOWN_FOLDERS.join(', ')}.`,
      from: { path: '^src/[^/]+/', pathNot: KNOWN_FOLDERS.map(pathOf) },
      to: { path: '^src/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: one of its modules must stop importing the next (move what both need into a module below them).',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'resolvable',
      severity: 'error',
      comment: 'An import that resolves to no file: the rules above cannot judge it (a `./x.js` specifier names the `./x.ts` file).',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // `import type` and type-only specifiers are dependencies too.
    tsPreCompilationDeps: true,
    // Resolved as tsc does (NodeNext): `./x.js` finds `./x.ts`.
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
