/**
 * Type-level JSON Schema: turns a schema written `as const` into the TypeScript type of the
 * values it accepts, so a tool's `run(state, input)` gets a typed `input`. Covers the parts of
 * JSON Schema that tool schemas use (type, properties, required, items, enum, const, anyOf/oneOf);
 * anything else becomes `unknown`.
 */

type Prettify<T> = { [K in keyof T]: T[K] } & {};

type RequiredKeys<S> = S extends { readonly required: readonly (infer R)[] } ? R & string : never;

type ObjectFrom<S> = S extends { readonly properties: infer P }
  ? Prettify<
      { -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromSchema<P[K]> } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromSchema<P[K]>;
      }
    >
  : Record<string, unknown>;

type FromType<T, S> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? S extends { readonly items: infer I }
            ? FromSchema<I>[]
            : unknown[]
          : T extends 'object'
            ? ObjectFrom<S>
            : unknown;

/** The type of the values a JSON Schema (written `as const`) accepts. */
export type FromSchema<S> = S extends { readonly const: infer C }
  ? C
  : S extends { readonly enum: readonly (infer E)[] }
    ? E
    : S extends { readonly anyOf: readonly (infer A)[] }
      ? FromSchema<A>
      : S extends { readonly oneOf: readonly (infer O)[] }
        ? FromSchema<O>
        : S extends { readonly type: readonly (infer T)[] }
          ? FromType<T, S>
          : S extends { readonly type: infer T }
            ? FromType<T, S>
            : S extends { readonly properties: unknown }
              ? ObjectFrom<S>
              : unknown;
