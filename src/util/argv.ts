/**
 * The command-line grammar that the node's flags (config/load.ts) and the entity commands (entity/cli.ts)
 * share: an argument that does not start with `--` is a positional; `--name=value` carries its value
 * inline; `--name value` takes the next argument, unless there is none or it is itself a flag. What a
 * flag means, and whether it takes a value at all, is left to the caller.
 */
export interface FlagArgument {
  name: string
  /** The value after `=`, when the flag was written `--name=value`. */
  inline: string | undefined
  /** The inline value, else the next argument (which is then consumed and not seen as a positional). */
  takeValue(): string
}

/**
 * Hands each flag of `argv` to `onFlag`, in order, and returns the positionals. A flag whose value is
 * missing throws `missingValue('--name needs a value')`, so that each command keeps its own error type.
 */
export function walkArgv(
  argv: readonly string[],
  onFlag: (flag: FlagArgument) => void,
  missingValue: (message: string) => Error
): string[] {
  const positionals: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (!arg.startsWith('--')) {
      positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
    const inline = eq === -1 ? undefined : arg.slice(eq + 1)
    const takeValue = (): string => {
      if (inline !== undefined) return inline
      const next = argv[i + 1]
      if (next === undefined || next.startsWith('--')) throw missingValue(`--${name} needs a value`)
      i++ // the loop's binding for this turn: the value is skipped
      return next
    }
    onFlag({ name, inline, takeValue })
  }
  return positionals
}

/** A usage error: src/cli.ts prints its message as one line and exits 2. */
export class CliError extends Error {
  override name = 'CliError'
}

export interface CommandFlags {
  /** The last value given. */
  get(name: string): string | undefined
  /** Every value of a repeated flag, in order. */
  all(name: string): string[]
  has(name: string): boolean
  positionals: string[]
}

/**
 * A command's flags: `--name value`, `--name=value`, repeats kept; the flags in `booleans` take no
 * value unless written `--name=value`. A missing value is a CliError.
 */
export function commandFlags(argv: readonly string[], booleans: ReadonlySet<string>): CommandFlags {
  const values = new Map<string, string[]>()
  const positionals = walkArgv(
    argv,
    ({ name, inline, takeValue }) => {
      const value = inline === undefined && booleans.has(name) ? 'true' : takeValue()
      values.set(name, [...(values.get(name) ?? []), value])
    },
    message => new CliError(message)
  )
  return {
    get: name => values.get(name)?.at(-1),
    all: name => values.get(name) ?? [],
    has: name => values.has(name),
    positionals
  }
}
