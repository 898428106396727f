/** The shape of one command's help (cli-help.ts holds the table). */
export interface CommandHelp {
  /** The words that name it: `keys new`, `entity serve`. */
  name: string
  /** The arguments after the name, in usage notation. */
  args: string
  summary: string
  /** `[flag, what it does]`; for `start` and `init` the settings table adds its flags by section. */
  flags: readonly (readonly [string, string])[]
  examples: readonly string[]
}
