/**
 * How the sandbox process is confined, and the command line that starts it.
 *
 * - `bwrap`: a filesystem jail (bubblewrap) in new user, pid, ipc, uts and cgroup namespaces (and a
 *   network namespace of its own with `--no-network`, its loopback up). The sandbox sees, read-only
 *   and at their own paths: the Node binary and the libraries it loads, what its agents' workers
 *   may read (Silo's runtime, each agent's folder, the node_modules and package.json files above
 *   it, a compiled agent's file; see permissions.ts), and from /etc only what DNS and TLS need
 *   (plus the loader's cache and the time zone); a fresh /proc, a minimal /dev and an empty,
 *   read-only /tmp holding its working folder. Nothing else exists inside: no socket files, no
 *   other users' files, no task files or artifacts, and a link that leads out of what is mounted
 *   leads nowhere. The sandbox is process 1 of its namespace, in a session of its own (a signal to
 *   its group reaches nothing outside), and dies with its parent.
 * - `unshare`: user and pid namespaces (and a network namespace with `--no-network`, loopback
 *   down), a session of its own; the whole file system is visible (Node's permission model still
 *   limits what the agents' workers read).
 * - `process`: a plain child process.
 *
 * Mounts are fixed when bubblewrap starts, so a jailed sandbox serves the agents whose workers
 * may read the same paths (see SandboxPool: one sandbox per mount set).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { PERMISSION_ADVICE } from '../errors.js';
import { PACKAGE_ROOT } from '../paths.js';
import { allowsRead, readableFor } from '../pool/permissions.js';

/** How the sandbox process is confined, strongest first. */
export type SandboxLevel = 'bwrap' | 'unshare' | 'process';

/** The level asked for: the strongest this machine allows (`auto`), or one level, forced. */
export type SandboxChoice = 'auto' | SandboxLevel;

export const SANDBOX_CHOICES: readonly SandboxChoice[] = ['auto', 'bwrap', 'unshare', 'process'];

/** The sandbox's working folder inside the jail: in its empty /tmp, read-only. */
export const JAIL_CWD = '/tmp/silo-sandbox-cwd';

/** The absolute path of a program on the host's PATH (the sandbox starts with no PATH of its own). */
export function which(program: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const path = join(dir || '.', program);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}

/** Whether a probe command runs here, and if not, the first line it said. */
function runs(command: string, args: string[], input?: string): string | null {
  const probe = spawnSync(command, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'], timeout: 5_000, env: {}, ...(input === undefined ? {} : { input }) });
  if (probe.status === 0) return null;
  const said = probe.stderr?.toString().trim().split('\n')[0];
  return said || (probe.error ? probe.error.message : `exit ${probe.signal ?? probe.status}`);
}

/**
 * `setpriv --pdeathsig KILL`: the kernel kills the sandbox when the host dies, even a host killed
 * with SIGKILL and a sandbox whose threads are stuck in system calls. Empty where it is missing.
 */
let pdeath: string[] | undefined;
export function deathSignal(): string[] {
  if (pdeath === undefined) {
    const setpriv = which('setpriv');
    pdeath = setpriv && runs(setpriv, ['--pdeathsig', 'KILL', 'true']) === null ? [setpriv, '--pdeathsig', 'KILL', '--'] : [];
  }
  return pdeath;
}

/** `unshare` (and `setsid`, where installed), or why user and pid namespaces do not work here. */
interface Unshare {
  program: string;
  setsid: string | null;
}
let unshareFound: Unshare | string | undefined;
/** unshare installed but not probed yet, taken to work, as bubblewrap is (see `presumed` below). */
let unsharePresumed: Unshare | undefined;
/** unshare's namespaces; --mount-proc: /proc shows the sandbox's own processes only. */
const UNSHARE_FLAGS = ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', '--mount-proc'];
function unshare(): Unshare | string {
  if (unshareFound === undefined) {
    const program = which('unshare');
    const failed = program === null ? 'unshare is not installed' : runs(program, [...UNSHARE_FLAGS, 'true']);
    unshareFound = failed === null ? { program: program!, setsid: which('setsid') } : `unshare --user --pid failed: ${failed}`;
  }
  return unshareFound;
}

/** bubblewrap, and which of its newer options this version has; why not where it does not run. */
interface Bubblewrap {
  program: string;
  disableUserns: boolean;
}
let bubblewrap: Bubblewrap | string | undefined;
function bwrap(): Bubblewrap | string {
  if (bubblewrap === undefined) {
    const program = which('bwrap');
    if (program === null) {
      bubblewrap = 'bubblewrap (bwrap) is not installed';
    } else {
      // The jail with the system's part only, running `node --version`: namespaces, the mounts,
      // the loader and the libraries all work, or the machine falls back to unshare. With
      // --disable-userns first; a bubblewrap older than 0.8 does not know it.
      let system: Mounts | null = null;
      try {
        system = systemMounts();
      } catch {
        // no /proc/self/maps: not Linux
      }
      const [passwd, group] = accounts();
      const probe = (found: Bubblewrap): string | null =>
        system === null
          ? 'cannot tell which libraries Node loads'
          : runs(program, [...jail(found, false, system, 0, 0), process.execPath, '--version'], `${passwd}${group}`);
      let found: Bubblewrap = { program, disableUserns: true };
      let failed = probe(found);
      if (failed !== null && /disable-userns/.test(failed)) failed = probe((found = { program, disableUserns: false }));
      bubblewrap = failed === null ? found : `bwrap failed: ${failed}`;
    }
  }
  return bubblewrap;
}

/**
 * Whether unshare's namespaces can be used without probing them first: `probed` (and they work),
 * `presumed` (installed, not probed: the first sandbox is the probe, as with bubblewrap), or false
 * (probed and failed, or not installed: ask unavailable()). Saves the probe's process start (and
 * setpriv's) on the way of every cold command where bubblewrap is missing.
 */
export function presumeUnshare(): 'probed' | 'presumed' | false {
  if (unshareFound !== undefined) return typeof unshareFound === 'string' ? false : 'probed';
  // Asked at every rollout until a first sandbox came up: the search of PATH is done once.
  if (unsharePresumed !== undefined) return 'presumed';
  const program = which('unshare');
  if (program === null) return false;
  unsharePresumed = { program, setsid: which('setsid') };
  return 'presumed';
}

/**
 * bubblewrap installed but not probed yet, taken to work (with --disable-userns): the probe runs
 * `node` in a jail, and so does starting a sandbox; a first sandbox that comes up is the probe
 * passed, one that does not calls for the probe (SandboxPool), which then decides. Saves the
 * probe's process start on the way of every cold command.
 */
let presumed: Bubblewrap | undefined;

/**
 * Whether bubblewrap can be used without probing it first: `probed` (and it works), `presumed`
 * (installed, not probed), or false (probed and failed, or not installed: ask unavailable()).
 */
export function presumeBwrap(): 'probed' | 'presumed' | false {
  if (bubblewrap !== undefined) return typeof bubblewrap === 'string' ? false : 'probed';
  // Asked at every rollout until a first sandbox came up (SandboxPool): PATH is searched once,
  // not once a rollout (each folder of PATH without it is a failed system call and an exception).
  if (presumed !== undefined) return 'presumed';
  const program = which('bwrap');
  if (program === null) return false;
  presumed = { program, disableUserns: true };
  return 'presumed';
}

/**
 * A sandbox started on a presumption (`level`'s, and setpriv's) did not come up: the next launch
 * probes them first.
 */
export function forgetPresumed(level: SandboxLevel): void {
  if (level === 'bwrap') presumed = undefined;
  if (level === 'unshare') unsharePresumed = undefined;
  if (pdeathPresumed) pdeath = undefined;
  pdeathPresumed = false;
}

/** setpriv taken to know --pdeathsig along with a presumption (its probe is a process start too). */
let pdeathPresumed = false;

/** bubblewrap's namespaces and process options (before the mounts). */
function namespaceFlags(b: Bubblewrap, noNetwork: boolean): string[] {
  return [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(noNetwork ? ['--unshare-net'] : []),
    ...(b.disableUserns ? ['--disable-userns'] : []),
    '--hostname',
    'sandbox',
    '--die-with-parent',
    // A session of its own: kill(0, sig) and kill(-1, sig) reach nothing outside the sandbox.
    '--new-session',
    // The sandbox itself is process 1 (no reaper in front): like under unshare, a signal from
    // inside its namespace that it does not handle (SIGKILL from an agent) does not end it.
    '--as-pid-1',
    '--cap-drop',
    'ALL',
  ];
}

/** Why each level is not available here (null: it is). */
export function unavailable(level: SandboxLevel): string | null {
  if (level === 'bwrap') {
    const b = bwrap();
    return typeof b === 'string' ? b : null;
  }
  if (level === 'unshare') {
    const u = unshare();
    return typeof u === 'string' ? u : null;
  }
  return null;
}

/**
 * Read-only bind mounts of host paths at the same paths, links included: a path reached through
 * a link is mounted as the link (the same target) plus what it leads to, so that paths and their
 * real paths both work inside. Everything is mounted at its real path, so a folder mounted holds
 * whatever is below it already.
 */
class Mounts {
  /** Destination → bubblewrap arguments. */
  readonly #ops = new Map<string, string[]>();

  /** Mounts `path` (absolute): the links on its way, then what it is. Missing paths are skipped. */
  bind(path: string, hops = 0): this {
    if (hops > 40) return this;
    const parts = resolve(path).split(sep).filter(Boolean);
    let at: string = sep;
    for (let i = 0; i < parts.length; i++) {
      const next = join(at, parts[i]!);
      let link: string | null = null;
      try {
        if (lstatSync(next).isSymbolicLink()) link = readlinkSync(next);
      } catch {
        return this; // missing (or unreadable): nothing to mount
      }
      if (link !== null) {
        this.#ops.set(next, ['--symlink', link, next]);
        const target = isAbsolute(link) ? link : join(at, link);
        return this.bind(join(target, ...parts.slice(i + 1)), hops + 1);
      }
      at = next;
    }
    // -try: a path gone since it was looked at (a file replaced, an agent's folder removed) is
    // left out instead of failing the start of the sandbox, and of every sandbox after it.
    this.#ops.set(at, ['--ro-bind-try', at, at]);
    return this;
  }

  /** Adds an operation of its own at `dest` (a /proc, a tmpfs ...). */
  add(dest: string, args: string[]): this {
    this.#ops.set(dest, args);
    return this;
  }

  /** Another set's operations, added to these. */
  merge(other: Mounts): this {
    for (const [dest, args] of other.#ops) if (!this.#ops.has(dest)) this.#ops.set(dest, args);
    return this;
  }

  /**
   * The arguments, parents before what is below them (bubblewrap mounts in order); an operation
   * under a mounted folder is dropped (the folder shows the same thing there already).
   */
  args(): string[] {
    const dests = [...this.#ops.keys()].sort();
    const out: string[] = [];
    const folders: string[] = [];
    for (const dest of dests) {
      const op = this.#ops.get(dest)!;
      const mirror = op[0] === '--ro-bind-try' || op[0] === '--symlink';
      if (mirror && folders.some((f) => dest.startsWith(f === sep ? f : `${f}${sep}`))) continue;
      out.push(...op);
      if (op[0] === '--ro-bind-try') folders.push(dest);
    }
    return out;
  }

  copy(): Mounts {
    return new Mounts().merge(this);
  }
}

/** The interpreter (dynamic loader) named in an ELF executable, or null. */
function interpreter(file: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(64);
    readSync(fd, head, 0, 64, 0);
    if (head.readUInt32BE(0) !== 0x7f454c46) return null;
    const is64 = head[4] === 2;
    const le = head[5] === 1;
    const u16 = (b: Buffer, o: number): number => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u32 = (b: Buffer, o: number): number => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
    const word = (b: Buffer, o: number): number => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(b, o));
    const phoff = word(head, is64 ? 0x20 : 0x1c);
    const size = u16(head, is64 ? 0x36 : 0x2a);
    const count = u16(head, is64 ? 0x38 : 0x2c);
    const table = Buffer.alloc(size * count);
    readSync(fd, table, 0, table.length, phoff);
    for (let i = 0; i < count; i++) {
      const at = i * size;
      if (u32(table, at) !== 3) continue; // PT_INTERP
      const offset = word(table, at + (is64 ? 8 : 4));
      const length = word(table, at + (is64 ? 32 : 16));
      const name = Buffer.alloc(Math.min(length, 4096));
      readSync(fd, name, 0, name.length, offset);
      return name.toString('utf8').replace(/\0.*$/s, '');
    }
    return null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The shared libraries this process has loaded (the same Node binary as the sandbox's), with the
 * links the loader finds them by (`libstdc++.so.6` for `libstdc++.so.6.0.30`), and glibc's DNS
 * modules, which older glibc loads only on the first lookup.
 */
function libraries(): string[] {
  const files = new Set<string>();
  for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const path = line.split(/\s+/).slice(5).join(' ');
    // An addon this host loaded (and its own libraries) is no part of the sandbox's Node.
    if (!path.startsWith(sep) || path.endsWith(' (deleted)') || path.includes(`${sep}node_modules${sep}`)) continue;
    if (/\.so(\.\d+)*$/.test(basename(path))) files.add(path);
  }
  const out = new Set(files);
  const listings = new Map<string, string[]>();
  const list = (dir: string): string[] => {
    let names = listings.get(dir);
    if (!names) {
      try {
        names = readdirSync(dir);
      } catch {
        names = [];
      }
      listings.set(dir, names);
    }
    return names;
  };
  for (const file of files) {
    const dir = dirname(file);
    const stem = basename(file).replace(/\.so(\.\d+)*$/, '.so');
    for (const name of list(dir)) {
      // (the names first: a library folder holds a thousand of them)
      const dns = name.startsWith('lib') && /^lib(nss_(files|dns)|resolv)\.so\.\d+$/.test(name);
      if (!dns && !name.startsWith(stem)) continue;
      const path = join(dir, name);
      if (out.has(path)) continue;
      try {
        if (dns || (lstatSync(path).isSymbolicLink() && realpathSync(path) === realpathSync(file))) out.add(path);
      } catch {
        // a dangling link
      }
    }
  }
  return [...out];
}

/** What DNS and TLS need from /etc (and where the CA certificates' links lead), the loader's cache, the time zone. */
const SYSTEM_FILES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/ssl/certs',
  '/usr/share/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust/extracted',
  '/etc/ld.so.cache',
  '/etc/localtime',
];

let system: Mounts | undefined;
/** The part of the jail every sandbox has: Node and its libraries, /etc's few files, /proc, /dev, /tmp. */
function systemMounts(): Mounts {
  if (!system) {
    const mounts = new Mounts().bind(process.execPath);
    const loader = interpreter(realpathSync(process.execPath));
    if (loader) mounts.bind(loader);
    for (const lib of libraries()) mounts.bind(lib);
    for (const file of SYSTEM_FILES) mounts.bind(file);
    mounts
      .add('/proc', ['--proc', '/proc'])
      .add('/dev', ['--dev', '/dev'])
      .add('/tmp', ['--tmpfs', '/tmp'])
      .add(JAIL_CWD, ['--dir', JAIL_CWD]);
    system = mounts;
  }
  return system.copy();
}

/** The folders and files a worker with these read permissions may read (`dir/*` is the folder). */
function paths(readable: readonly string[]): string[] {
  return [...new Set(readable.map((p) => (p.endsWith(`${sep}*`) ? p.slice(0, -2) : p)))].sort();
}

/** What the sandbox's own main thread loads: Silo's runtime, its package.json and its packages. */
let runtime: string[] | undefined;
function runtimePaths(): string[] {
  runtime ??= paths(readableFor(join(PACKAGE_ROOT, 'dist', 'bundle', 'sandbox-child.cjs')));
  return runtime;
}

/**
 * Which sandbox can run a worker with these read permissions: one whose mounts are the same (for
 * `bwrap`); any sandbox for the other levels (they see the whole file system).
 */
export function mountKey(level: SandboxLevel, readable: readonly string[]): string {
  return level === 'bwrap' ? JSON.stringify(paths(readable)) : '';
}

/** What starts the sandbox: a command, its arguments up to the Node binary, and where it runs. */
export interface Launch {
  command: string;
  args: string[];
  /** Whether the sandbox needs a working folder made by the host (the jail has one of its own). */
  hostCwd: boolean;
  /** Text to write to descriptors 4, 5 ... of the command (and close), which it reads as it starts. */
  inputs: string[];
}

/**
 * The jail's /etc/passwd and /etc/group: one user, the sandbox's own (so that os.userInfo() and
 * os.homedir() work as they do outside), and nothing of this machine's users.
 */
function accounts(): string[] {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  return [`sandbox:x:${uid}:${gid}:Silo sandbox:${JAIL_CWD}:/sbin/nologin\n`, `sandbox:x:${gid}:\n`];
}

/**
 * bubblewrap's arguments up to the command: the namespaces, `mounts`, /etc/passwd and
 * /etc/group read from descriptors `passwdFd` and `groupFd`, everything read-only.
 */
function jail(b: Bubblewrap, noNetwork: boolean, mounts: Mounts, passwdFd: number, groupFd: number): string[] {
  const accounts = mounts.copy().add('/etc/passwd', ['--ro-bind-data', String(passwdFd), '/etc/passwd']);
  // (a probe hands both in one: a descriptor is read once)
  if (groupFd !== passwdFd) accounts.add('/etc/group', ['--ro-bind-data', String(groupFd), '/etc/group']);
  return [...namespaceFlags(b, noNetwork), ...accounts.args(), '--remount-ro', '/tmp', '--remount-ro', '/', '--chdir', JAIL_CWD, '--'];
}

/**
 * The command line in front of `node <script>` for a sandbox at `level` (which must be available)
 * whose workers may read `readable`; the Node binary is the last argument.
 */
export function launch(level: SandboxLevel, options: { noNetwork: boolean; readable: readonly string[] }): Launch {
  const presuming = level === 'bwrap' && bubblewrap === undefined && presumed !== undefined;
  const presumingUnshare = level === 'unshare' && unshareFound === undefined && unsharePresumed !== undefined;
  if ((presuming || presumingUnshare) && pdeath === undefined) {
    const setpriv = which('setpriv');
    pdeath = setpriv ? [setpriv, '--pdeathsig', 'KILL', '--'] : [];
    pdeathPresumed = true;
  }
  const prefix: string[] = [...deathSignal()];
  if (level === 'bwrap') {
    const b = presuming ? presumed! : bwrap();
    if (typeof b === 'string') throw new Error(b);
    const mounts = systemMounts();
    for (const path of [...runtimePaths(), ...paths(options.readable)]) mounts.bind(path);
    prefix.push(b.program, ...jail(b, options.noNetwork, mounts, 4, 5));
  } else if (level === 'unshare') {
    const u = presumingUnshare ? unsharePresumed! : unshare();
    if (typeof u === 'string') throw new Error(u);
    // setsid: the sandbox (process 1 of its namespace) leads a session and a process group of its
    // own, so a signal to its group (kill(0, sig)) does not reach unshare outside.
    prefix.push(u.program, ...UNSHARE_FLAGS, ...(options.noNetwork ? ['--net'] : []), '--', ...(u.setsid ? [u.setsid] : []));
  } else if (options.noNetwork) {
    throw new Error('--no-network needs Linux namespaces (unshare --net or bubblewrap), which are not available here');
  }
  prefix.push(process.execPath);
  const [command, ...args] = prefix;
  return { command: command!, args, hostCwd: level !== 'bwrap', inputs: level === 'bwrap' ? accounts() : [] };
}

/** Files named as missing in an error: a module not found, or a file system call's ENOENT. */
const MISSING = /Cannot find (?:module|package) '(\/[^'\n]+)'|\bENOENT: no such file or directory, \w+ '(\/[^'\n]+)'/g;

/**
 * In the jail a file outside what an agent may read does not exist, so an agent that imports one
 * gets "Cannot find module" (and `realpathSync` an ENOENT) where, outside the jail, Node would say
 * the permission was refused (its file system calls are refused before they look). For the user
 * (the agent never sees this): an error naming a file that the host does see, outside `readable`,
 * gets the note the permission error carries. At most a few files are looked at.
 */
export function explainHidden(message: string, readable: readonly string[]): string {
  let out = message;
  const seen = new Set<string>();
  for (const match of message.matchAll(MISSING)) {
    const path = match[1] ?? match[2];
    if (!path || seen.has(path) || seen.size >= 4) continue;
    seen.add(path);
    if (!allowsRead(readable, path) && existsSync(path)) out = out.replace(match[0], `${match[0]} (FileSystemRead ${path}): ${PERMISSION_ADVICE.FileSystemRead}`);
  }
  return out;
}
