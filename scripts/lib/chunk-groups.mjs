// Fewer, larger chunks for scripts/bundle-package.mjs. esbuild splits a bundle into one chunk per
// set of entry points that reach a module, and every import() target is an entry point: with the
// ~55 import()s that keep each command's modules to that command, `silo eval` loaded 69 files, 49
// of them under 5 KB, and Node's ES module loader costs ~0.5 ms of the main thread a file.
//
// planGroups() decides which modules go together, from the module graph of a build without groups;
// groupsPlugin() makes esbuild put each group in one chunk, without a change to the modules. esbuild
// still makes one chunk per set of entry points reaching a module: each entry point that reaches a
// member of a group is made to reach all of it (it imports the group: a module of the plugin's that
// imports every member), and the import()s of a group's members, or of one command's action, load
// one module of the plugin's (`export *` of them) instead of a file each.
import { basename, resolve } from 'node:path';

const NAMESPACE = 'silo-chunk';
const INNER = Symbol('chunk-groups: resolve as esbuild would');

/**
 * The module graph of an esbuild metafile, by absolute path: each module's static imports (import
 * and require), its import() targets and its size; and the names each entry point exports.
 */
export function moduleGraph(metafile, root) {
  const modules = new Map();
  for (const [path, input] of Object.entries(metafile.inputs)) {
    const edges = (dynamic) => input.imports.filter((i) => !i.external && (i.kind === 'dynamic-import') === dynamic).map((i) => resolve(root, i.path));
    modules.set(resolve(root, path), { imports: edges(false), dynamic: edges(true), bytes: input.bytes });
  }
  const exports = new Map();
  for (const output of Object.values(metafile.outputs)) if (output.entryPoint) exports.set(resolve(root, output.entryPoint), output.exports);
  return { modules, exports };
}

/** The modules `roots` load by static imports; with `groups`, a member loads its whole group. */
export function reachable(graph, roots, groups = []) {
  const groupOf = new Map(groups.flatMap((members, g) => members.map((m) => [m, g])));
  const seen = new Set(roots);
  const stack = [...roots];
  const joined = new Set();
  const add = (m) => void (seen.has(m) || (seen.add(m), stack.push(m)));
  while (stack.length > 0) {
    const m = stack.pop();
    for (const next of graph.modules.get(m)?.imports ?? []) add(next);
    const g = groupOf.get(m);
    if (g !== undefined && !joined.has(g)) {
      joined.add(g);
      groups[g].forEach(add);
    }
  }
  return seen;
}

const sum = (graph, modules) => [...modules].reduce((total, m) => total + graph.modules.get(m).bytes, 0);

/**
 * The groups, as arrays of absolute paths. First, modules loaded in the same `phases` (each a list
 * of root modules; a phase loads what they reach by static imports) go together: no phase loads
 * more for it. Modules no phase loads, and those `alone` says so of, are left out.
 *
 * Then two groups are joined, one pair at a time, while a join gains: counted over the
 * `scenarios` (the lists of root modules a user's command or call loads), a file less to load
 * where both were loaded is worth `fileBytes`, and every byte a scenario loads more costs one. A
 * join is refused if, all joins together, a scenario would load more than `budget` bytes that it
 * did not load without groups (a `fixed` one, any), or a module `keepOut(module, scenario)` keeps
 * out of it.
 */
export function planGroups(graph, { phases, alone, scenarios, fixed, keepOut, budget, fileBytes }) {
  const phasesOf = new Map();
  for (const [name, roots] of Object.entries(phases)) {
    for (const m of reachable(graph, roots)) if (!alone(m)) phasesOf.set(m, [...(phasesOf.get(m) ?? []), name]);
  }
  const byPhases = new Map();
  for (const [m, names] of phasesOf) byPhases.set(names.join(' '), [...(byPhases.get(names.join(' ')) ?? []), m]);
  let groups = [...byPhases.values()];

  const names = Object.keys(scenarios);
  const loadsOf = (gs) => new Map(names.map((name) => [name, reachable(graph, scenarios[name], gs)]));
  const before = loadsOf([]);
  for (;;) {
    const loads = loadsOf(groups);
    let best;
    const loadedIn = groups.map((members) => new Set(names.filter((name) => members.some((m) => loads.get(name).has(m)))));
    for (const [i, a] of groups.entries()) {
      for (const [j, b] of groups.entries()) {
        // (No gain unless some scenario loads both.)
        if (j <= i || ![...loadedIn[i]].some((name) => loadedIn[j].has(name))) continue;
        const trial = [...groups.filter((_, k) => k !== i && k !== j), [...a, ...b]];
        let gain = 0;
        let allowed = true;
        for (const name of names.filter((n) => loadedIn[i].has(n) || loadedIn[j].has(n))) {
          const load = loads.get(name);
          if (loadedIn[i].has(name) && loadedIn[j].has(name)) gain += fileBytes;
          const after = reachable(graph, scenarios[name], trial);
          gain -= sum(graph, after) - sum(graph, load);
          const more = [...after].filter((m) => !before.get(name).has(m));
          if (sum(graph, more) > (fixed.includes(name) ? 0 : budget) || more.some((m) => keepOut(m, name))) {
            allowed = false;
            break;
          }
        }
        if (allowed && gain > 0 && (best === undefined || gain > best.gain)) best = { gain, trial };
      }
    }
    if (best === undefined) return groups.map((members) => members.sort());
    groups = best.trial;
  }
}

/**
 * The esbuild plugin that makes each group one chunk, and the entry points to build with it (one
 * that reaches a group is wrapped in a module of the plugin's that also imports the group).
 * `together` maps a module to the import() targets it takes together (a command's action): its
 * import()s of them load one module of the plugin's.
 */
export function groupsPlugin({ root, graph, groups, entryPoints, together }) {
  const groupOf = new Map(groups.flatMap((members, g) => members.map((m) => [m, g])));
  /** The groups that whoever loads `roots` must load whole. */
  const groupsReached = (roots) => [...new Set([...reachable(graph, roots, groups)].flatMap((m) => groupOf.get(m) ?? []))];
  const stem = (path) => basename(path).replace(/\.[cm]?js$/, '');

  // The plugin's modules, by path (its last part names the chunk: chunks/<name>-<hash>.js): the
  // modules each exports all of (`export *`, while no name collides), imports, and groups it loads.
  const units = new Map();
  const unit = (path) => units.get(path) ?? units.set(path, { exports: [], names: new Set(), imports: [], groups: [] }).get(path);
  const exportAll = (u, m) => {
    const names = graph.exports.get(m) ?? [];
    if (names.some((n) => u.names.has(n))) return false;
    names.forEach((n) => u.names.add(n));
    u.exports.push(m);
    return true;
  };
  const groupPath = groups.map((members, g) => `group/${g}/${stem(members.reduce((a, b) => (graph.modules.get(b).bytes > graph.modules.get(a).bytes ? b : a)))}-group`);
  groups.forEach((members, g) => {
    unit(groupPath[g]).imports = members;
    unit(groupPath[g]).groups = groupsReached(members).filter((other) => other !== g);
  });
  const wrapper = (m) => {
    const path = `entry/${m}`;
    if (!units.has(path)) {
      exportAll(unit(path), m);
      unit(path).groups = groupsReached([m]);
    }
    return path;
  };
  // What an import() of each target loads: the module of its group (one for all the group's
  // targets), a wrapper of its own if it reaches a group, or the target itself.
  const targets = [...new Set([...graph.modules.values()].flatMap((m) => m.dynamic))].sort();
  const loadedAs = new Map();
  for (const t of targets) {
    const g = groupOf.get(t);
    if (g !== undefined && exportAll(unit(groupPath[g]), t)) loadedAs.set(t, groupPath[g]);
    else if (groupsReached([t]).length > 0) loadedAs.set(t, wrapper(t));
  }
  const actions = new Map(
    [...together].map(([importer, taken], i) => {
      const path = `action/${i}/${stem(importer)}-action`;
      const mine = [...taken].sort().filter((t) => exportAll(unit(path), t));
      unit(path).groups = groupsReached(mine);
      return [importer, { path, targets: new Set(mine) }];
    }),
  );
  const wrapped = Object.fromEntries(
    Object.entries(entryPoints).map(([name, path]) => [name, groupsReached([resolve(root, path)]).length > 0 ? `${NAMESPACE}:${wrapper(resolve(root, path))}` : path]),
  );

  const contents = (path) => {
    const u = units.get(path);
    const lines = u.exports.flatMap((m) => [`export * from ${JSON.stringify(m)};`, ...((graph.exports.get(m) ?? []).includes('default') ? [`export { default } from ${JSON.stringify(m)};`] : [])]);
    // (A package that says it has no side effects would be dropped from a bare import.)
    u.imports.forEach((m, k) => u.exports.includes(m) || lines.push(m.includes('/node_modules/') ? `export * as __siloMember${k} from ${JSON.stringify(m)};` : `import ${JSON.stringify(m)};`));
    u.groups.forEach((g) => lines.push(`import ${JSON.stringify(`${NAMESPACE}:${groupPath[g]}`)};`));
    return `${lines.join('\n')}\n`;
  };

  const plugin = {
    name: 'chunk-groups',
    setup(build) {
      build.onResolve({ filter: new RegExp(`^${NAMESPACE}:`) }, (args) => ({ path: args.path.slice(NAMESPACE.length + 1), namespace: NAMESPACE }));
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === INNER) return undefined;
        const resolved = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: INNER });
        if (resolved.errors.length > 0 || resolved.external) return undefined;
        const action = actions.get(args.importer);
        const path = action?.targets.has(resolved.path) ? action.path : loadedAs.get(resolved.path);
        return path === undefined ? undefined : { path, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({ contents: contents(args.path), resolveDir: root, loader: 'js' }));
    },
  };
  return { plugin, entryPoints: wrapped };
}

/** The metafile without the plugin's modules (they hold no code: what a chunk holds is the rest). */
export function withoutPluginModules(metafile) {
  const real = (inputs) => Object.fromEntries(Object.entries(inputs).filter(([path]) => !path.startsWith(`${NAMESPACE}:`)));
  return { inputs: real(metafile.inputs), outputs: Object.fromEntries(Object.entries(metafile.outputs).map(([path, output]) => [path, { ...output, inputs: real(output.inputs) }])) };
}
