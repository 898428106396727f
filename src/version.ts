import { readFileSync } from 'node:fs'

/** This software's version, from package.json (the same path from src/ and dist/). */
export const NODE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version
