// Preloaded with `node --import` into a `silo` command: appends every module the command loads
// (ES modules through a loader hook, CommonJS through Module._load), one URL or path a line, to
// the file named by SILO_TEST_MODULES, as each loads. Used by module-graph.test.ts.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.SILO_TEST_MODULES;
const hook = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) { appendFileSync(${JSON.stringify(file)}, url + '\\n'); return next(url, context); }`;
register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);

const Module = createRequire(import.meta.url)('node:module');
const load = Module._load;
Module._load = function (request, parent, isMain) {
  try {
    appendFileSync(file, `${Module._resolveFilename(request, parent, isMain)}\n`);
  } catch {
    // not resolvable: Module._load throws the real error
  }
  return load.apply(this, arguments);
};
