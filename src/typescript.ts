/** True for the file names that need the TypeScript loader (tsx). No side effects: workers import it. */
export function isTypeScript(path: string): boolean {
  return /\.(c|m)?tsx?$/.test(path);
}
