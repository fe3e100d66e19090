/**
 * Typed arrays and DataViews handed to an agent's worker carry their own bytes, never the rest of
 * the memory they are a view of. Structured clone (structuredClone, postMessage) copies a view's
 * whole backing ArrayBuffer: a small Buffer (`Buffer.from('abc')`) is a slice of Node's shared
 * 8 KiB pool, so a tool returning one would hand the agent 8 KiB of the host's pool, other
 * rollouts' data among it. (V8's serializer, what the sandbox's link uses, writes a view's own
 * bytes only; its deserializer gives views of the message, or of the pool: see link.ts.)
 */

/** A copy for an agent's worker: structuredClone (through tracking proxies), then `ownBytes`. */
export function copyForWorker<T>(value: T): T {
  return ownBytes(structuredClone(value));
}

/**
 * Gives every typed array and DataView in `copy` a buffer of its own holding exactly its bytes,
 * of the same type (a Buffer stays a Buffer, a Float64Array a Float64Array), and returns `copy`
 * (a view's copy, if `copy` is one). Changes `copy` in place: call it on a fresh structured clone,
 * never on a value someone else holds.
 *
 * What structured clone keeps, this keeps: a view reached twice stays one view, and a view whose
 * ArrayBuffer is in `copy` itself (the whole of it was handed over anyway) stays a view of it. Two
 * views of one buffer get a buffer each (sharing one would hand over the bytes between them).
 *
 * One pass over the copy, which holds nothing but data (no getters or proxies run); a value
 * without views is left as it is.
 */
export function ownBytes<T>(copy: T): T {
  if (typeof copy !== 'object' || copy === null) return copy;
  if (ArrayBuffer.isView(copy)) return exactView(copy) as T;
  /** Every object reached, views aside; an ArrayBuffer in it was reached as a value of its own. */
  const seen = new Set<object>([copy]);
  const stack: object[] = [copy];
  /** Where a view sits: an object's or array's property, or a Map or Set holding one. */
  const slots: [Record<PropertyKey, unknown>, string, ArrayBufferView][] = [];
  const collections: (Map<unknown, unknown> | Set<unknown>)[] = [];
  // Returns true for a view (whose place the caller notes); goes on into any other object.
  const visit = (value: unknown): boolean => {
    if (typeof value !== 'object' || value === null) return false;
    if (ArrayBuffer.isView(value)) return true;
    if (!seen.has(value)) {
      seen.add(value);
      stack.push(value);
    }
    return false;
  };
  const note = (object: object, key: string, view: unknown): void => void slots.push([object as Record<PropertyKey, unknown>, key, view as ArrayBufferView]);
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    // (Arrays and plain objects are most of any value: their loops do visit's work inline.)
    if (Array.isArray(node)) {
      const array = node as unknown[];
      for (let i = 0; i < array.length; i++) {
        const value = array[i];
        if (typeof value !== 'object' || value === null) continue;
        if (ArrayBuffer.isView(value)) note(array, String(i), value);
        else if (!seen.has(value)) {
          seen.add(value);
          stack.push(value);
        }
      }
      // Properties besides the elements, which structured clone keeps too (a match's `groups`):
      // Object.keys lists them last, after every index.
      const keys = Object.keys(array);
      for (let k = keys.length - 1; k >= 0 && !isIndex(keys[k]!); k--) {
        const value = (array as unknown as Record<string, unknown>)[keys[k]!];
        if (visit(value)) note(array, keys[k]!, value);
      }
    } else if (isPlain(node)) {
      const object = node as Record<string, unknown>;
      // (for...in is the fastest way through an object's keys; it would list inherited ones too
      // if something had added enumerable properties to Object.prototype: those are not the copy's)
      for (const key in object) {
        const value = object[key];
        if (typeof value !== 'object' || value === null || !Object.hasOwn(object, key)) continue;
        if (ArrayBuffer.isView(value)) note(object, key, value);
        else if (!seen.has(value)) {
          seen.add(value);
          stack.push(value);
        }
      }
    } else if (node instanceof Map) {
      let views = false;
      for (const [key, value] of node) {
        const inKey = visit(key);
        if (visit(value) || inKey) views = true;
      }
      if (views) collections.push(node);
    } else if (node instanceof Set) {
      let views = false;
      for (const value of node) if (visit(value)) views = true;
      if (views) collections.push(node);
    } else if (node instanceof Error) {
      // A clone keeps `cause` (not enumerable) besides the message and the stack.
      for (const key of Object.getOwnPropertyNames(node)) {
        const descriptor = Object.getOwnPropertyDescriptor(node, key);
        if (descriptor && 'value' in descriptor && visit(descriptor.value)) note(node, key, descriptor.value);
      }
    }
    // Anything else (Date, RegExp, ArrayBuffer, a boxed primitive, a Blob) holds no views.
  }
  if (slots.length === 0 && collections.length === 0) return copy;
  const copies = new Map<ArrayBufferView, ArrayBufferView>();
  const own = (value: unknown): unknown => {
    if (!ArrayBuffer.isView(value) || seen.has(value.buffer)) return value;
    let view = copies.get(value);
    if (view === undefined) copies.set(value, (view = exactView(value)));
    return view;
  };
  for (const [object, key, view] of slots) {
    // (defined, not assigned: a `__proto__` key of the copy's own must not set its prototype)
    if (key === '__proto__') Object.defineProperty(object, key, { value: own(view), enumerable: true, writable: true, configurable: true });
    else object[key] = own(view);
  }
  for (const collection of collections) {
    // Cleared and filled again, so that each entry keeps its place.
    if (collection instanceof Map) {
      const entries = [...collection];
      collection.clear();
      for (const [key, value] of entries) collection.set(own(key), own(value));
    } else {
      const values = [...collection];
      collection.clear();
      for (const value of values) collection.add(own(value));
    }
  }
  return copy;
}

/** A copy of `view` of the same type over a buffer of exactly its bytes. */
export function exactView<T extends ArrayBufferView>(view: T): T {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();
  if (view instanceof DataView) return new DataView(bytes.buffer) as unknown as T;
  // (Buffer.from of an ArrayBuffer makes a view of it, not a copy from the pool)
  if (Buffer.isBuffer(view)) return Buffer.from(bytes.buffer) as unknown as T;
  // A typed array's tag names its type, whatever its prototype says (a structured clone's views
  // are of the built-in types anyway).
  const type = (globalThis as unknown as Record<string, (new (buffer: ArrayBufferLike) => T) | undefined>)[(view as unknown as { [Symbol.toStringTag]: string })[Symbol.toStringTag]];
  if (type === undefined) throw new TypeError('a view of an unknown type cannot be copied');
  return new type(bytes.buffer);
}

/** Whether `value` is a plain object (a structured clone's objects are). */
function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Whether `key` is an array index ('0' to '4294967294', no leading zero). */
function isIndex(key: string): boolean {
  const n = key.length;
  if (n === 0 || n > 10 || (n > 1 && key.charCodeAt(0) === 0x30)) return false;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return n < 10 || key <= '4294967294';
}
