/** Task selection: `--task` takes ids or globs (`retail/test/*`), `--tag` takes tags. */
import { SiloError } from './errors.js';
import type { LoadedTask } from './load.js';

/** `*` matches within one `/`-separated part, `**` across parts, `?` one character. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** OR within ids/globs and within tags, AND between the two. */
export function selectTasks(tasks: LoadedTask[], filters: { task?: readonly string[]; tag?: readonly string[] }): LoadedTask[] {
  const ids = (filters.task ?? []).map(globToRegExp);
  const tags = filters.tag ?? [];
  const selected = tasks.filter(
    ({ task }) =>
      (ids.length === 0 || ids.some((re) => re.test(task.id))) && (tags.length === 0 || tags.some((t) => task.tags?.includes(t))),
  );
  if (selected.length === 0) {
    const wanted = [...(filters.task ?? []).map((t) => `--task ${t}`), ...tags.map((t) => `--tag ${t}`)].join(' ');
    const known = tasks
      .slice(0, 10)
      .map((t) => t.task.id)
      .join(', ');
    throw new SiloError('SILO_USAGE', `no task matches ${wanted}; tasks here: ${known}${tasks.length > 10 ? ', …' : ''}`);
  }
  return selected;
}
